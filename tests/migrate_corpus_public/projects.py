# SPDX-License-Identifier: Apache-2.0
"""The public Keras 2-era multi-GPU projects `measure.py` runs, and how.

Each entry names the public repository, the commit and the files taken, the
licence, the domain and the multi-GPU idiom, and the harness: the entry
point, its argv (tiny sizes), and `setup`, Python run before the entry point
that only writes tiny data files at the paths the project reads or replaces
its data-loading functions with tiny random arrays of the right shapes.

The projects' own files are not in this repository: the public code search
this corpus was built with lets its code be read and run, not committed. They
are copied into the corpus folder (`DIR/<name>/src`, with `SOURCE.md` and
`LICENSE`) from the repository at the commit below.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class PublicProject:
    """One public project and its harness.

    Args:
        name: Folder name in the corpus.
        repo: GitHub owner/name.
        commit: Full commit the files come from.
        licence: SPDX identifier of the repository's licence ("none" if it has none).
        domain: What the project trains.
        idiom: How it uses several GPUs.
        files: Paths taken from the repository (git pathspecs).
        entry: Script path in the project (or `-m package.module`).
        argv: Command line after the script (tiny sizes).
        setup: Python run first in the training process, with the project
            folder importable (`np`, `keras`, `os`, `sys` are defined).
        driver: For a library, the calls its README shows (run as
            `__main__` instead of an entry script).
        load_setup: Python run first in the loading process; leaves
            `custom_objects` defined for the project's own layers, and may
            define `rebuild()`, the project's own builder, for a weights
            file whose architecture Keras cannot record.
        cwd: Folder, under the project, the entry point runs in.
        epochs: Epoch cap per `fit`.
        steps: Step cap per epoch.
        probe_size: Size of each undefined input axis of the probe batch.
        saves: False when the project, by design, writes no model file.
        devices: Simulated devices (4, or what the project hard-codes).
        timeout: Seconds the slow test gives each stage (a deep network on 4
            replicas needs more on the shared 2-core machine).
        blocked_on: What stops it today (the idiom, from the last measurement).
    """

    name: str
    repo: str
    commit: str
    licence: str
    domain: str
    idiom: str
    files: tuple[str, ...]
    entry: str = ""
    argv: tuple[str, ...] = ()
    setup: str = ""
    driver: str = ""
    load_setup: str = ""
    cwd: str = "."
    epochs: int = 1
    steps: int = 2
    probe_size: int = 32
    saves: bool = True
    devices: int = 4
    timeout: int = 600
    blocked_on: str = ""

    @property
    def permissive(self) -> bool:
        return self.licence in {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "Unlicense"}

    def harness_spec(self) -> dict:
        entry = self.entry
        setup = self.setup
        if self.driver:
            entry = "_harness_driver.py"
            setup = setup + f"\nopen({entry!r}, 'w').write({self.driver!r})\n"
        return {
            "entry": entry,
            "argv": list(self.argv),
            "setup": setup,
            "load_setup": self.load_setup,
            "cwd": self.cwd,
            "epochs": self.epochs,
            "steps": self.steps,
            "probe_size": self.probe_size,
            "saves": self.saves,
            "devices": self.devices,
        }


# Tiny stand-ins shared by several projects.
_DATASETS = """
def _images(shape, classes, train=16, test=8):
    rng = np.random.default_rng(0)
    def split(rows):
        x = rng.integers(0, 255, (rows,) + shape, dtype=np.uint8)
        # Every class present (LabelBinarizer sizes its output from the labels seen).
        y = (np.arange(rows) % classes).astype(np.uint8).reshape(rows, 1)
        return x, (y if len(shape) == 3 else y[:, 0])
    return split(train), split(test)
keras.datasets.cifar10.load_data = lambda *a, **k: _images((32, 32, 3), 10)
keras.datasets.mnist.load_data = lambda *a, **k: _images((28, 28), 10)
"""


def _config(**values) -> str:
    """Smaller sizes in the project's own config module (what its config allows)."""
    lines = ["import config"]
    lines += [f"config.{name} = {value!r}" for name, value in values.items()]
    return "\n".join(lines) + "\n"


def _generators(**replacements: str) -> str:
    """The project's data_generator functions, replaced by tiny batches shaped like the model."""
    replacements = replacements or {
        "train_gen": "lambda: ModelShapedData()",
        "valid_gen": "lambda: ModelShapedData()",
    }
    lines = [
        "try:",
        "    import data_generator",
        "except Exception:  # its module-level code reads the data set",
        "    data_generator = stub_module('data_generator')",
    ]
    lines += [f"data_generator.{name} = {value}" for name, value in replacements.items()]
    return "\n".join(lines) + "\n"


_GENERATORS = _generators()

_PRETRAINED_VGG16 = """
from parallel_keras.saving import atomic
os.makedirs("models", exist_ok=True)
atomic.save_weights(keras.applications.VGG16(weights=None, include_top={top}), "models/{name}")
"""

PROJECTS: tuple[PublicProject, ...] = (
    PublicProject(
        name="chexnet",
        repo="brucechou1983/CheXNet-Keras",
        commit="b80afc83a3b3550fae3d7acc27b4cfa75272517a",
        licence="MIT",
        domain="medical imaging (chest X-ray, 14-label classification)",
        idiom="multi_gpu_model + own MultiGPUModelCheckpoint(ModelCheckpoint)",
        files=("*.py", "sample_config.ini"),
        entry="train.py",
        timeout=1800,  # DenseNet121 on 4 replicas: 947 s on the loaded machine (27 Nov)
        setup="""
import configparser, csv
from PIL import Image
os.environ["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"
config = configparser.ConfigParser()
config.read("sample_config.ini")
names = config["DEFAULT"]["class_names"].split(",")
config["DEFAULT"]["output_dir"] = "out"
config["DEFAULT"]["image_source_dir"] = "images"
config["DEFAULT"]["base_model_name"] = "DenseNet121"
config["TRAIN"].update(use_base_model_weights="false", use_trained_model_weights="false",
    epochs="1", batch_size="8", image_dimension="32", train_steps="2", validation_steps="1",
    dataset_csv_dir="split", generator_workers="1", show_model_summary="false")
with open("config.ini", "w") as file:
    config.write(file)
os.makedirs("images", exist_ok=True); os.makedirs("split", exist_ok=True)
rng = np.random.default_rng(0)
for split in ("train", "dev", "test"):
    with open(os.path.join("split", split + ".csv"), "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["Image Index"] + names)
        for i in range(16):
            image = f"{split}_{i}.png"
            Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(os.path.join("images", image))
            writer.writerow([image] + [int(v) for v in rng.integers(0, 2, len(names))])
""",
    ),
    PublicProject(
        name="keras_yolo3",
        repo="experiencor/keras-yolo3",
        commit="768c524f277adbfd26c2f44d73cb1826bbaf2d10",
        licence="MIT",
        domain="object detection (YOLOv3)",
        idiom="vendored copy of multi_gpu_model (utils/multi_gpu_model.py)",
        files=("*.py", "utils", "zoo"),
        entry="train.py",
        argv=("-c", "config.json"),
        setup="""
import json
from PIL import Image
rng = np.random.default_rng(0)
os.makedirs("voc/img", exist_ok=True); os.makedirs("voc/ann", exist_ok=True)
for i in range(8):
    Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(f"voc/img/{i}.jpg")
    with open(f"voc/ann/{i}.xml", "w") as file:
        file.write(f"<annotation><filename>{i}.jpg</filename><size><width>64</width><height>64</height></size>"
                   "<object><name>raccoon</name><bndbox><xmin>8</xmin><ymin>8</ymin><xmax>40</xmax><ymax>40</ymax></bndbox></object></annotation>")
config = {
  "model": {"min_input_size": 64, "max_input_size": 64, "anchors": [10,13,16,30,33,23,30,61,62,45,59,119,116,90,156,198,373,326], "labels": ["raccoon"]},
  "train": {"train_image_folder": "voc/img/", "train_annot_folder": "voc/ann/", "cache_name": "train.pkl",
            "train_times": 1, "batch_size": 4, "learning_rate": 1e-4, "nb_epochs": 1, "warmup_epochs": 0,
            "ignore_thresh": 0.5, "gpus": "0,1,2,3", "grid_scales": [1,1,1], "obj_scale": 5, "noobj_scale": 1,
            "xywh_scale": 1, "class_scale": 1, "tensorboard_dir": "logs", "saved_weights_name": "raccoon.h5", "debug": False},
  "valid": {"valid_image_folder": "", "valid_annot_folder": "", "cache_name": "", "valid_times": 1},
}
json.dump(config, open("config.json", "w"))
# The pretrained backend the README downloads: a Keras 2 weights file with no matching layer
# names, so a by_name load keeps every layer as initialised.
from parallel_keras.saving import atomic
stand_in = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="not_in_yolo")])
atomic.save_weights(stand_in, "backend.h5")
""",
    ),
    PublicProject(
        name="textgenrnn",
        repo="minimaxir/textgenrnn",
        commit="a86cf77214b07377962f5d7db51328cc1e5b0024",
        licence="MIT",
        domain="text generation (char-level LSTM)",
        idiom="multi_gpu_model (train_on_texts(multi_gpu=True))",
        files=("textgenrnn",),
        driver="""
from textgenrnn import textgenrnn
texts = ["the quick brown fox jumps over the lazy dog", "hello world from keras two"] * 8
textgen = textgenrnn(name="corpus")
textgen.train_on_texts(texts, num_epochs=1, batch_size=8, gen_epochs=0, multi_gpu=True)
textgen.save("corpus_weights.hdf5")
""",
        probe_size=40,
        load_setup="from textgenrnn.AttentionWeightedAverage import AttentionWeightedAverage\n"
        "custom_objects = {'AttentionWeightedAverage': AttentionWeightedAverage}",
    ),
    PublicProject(
        name="nuclick",
        repo="navidstuv/NuClick",
        commit="e37e802f52a676f5efdb243acbebb1e41f9e4054",
        licence="GPL-3.0",
        domain="medical imaging (interactive nuclei segmentation)",
        idiom="multi_gpu_model + template built under tf.device('/cpu:0')",
        files=("*.py", "data_handler", "models", "utils"),
        entry="train.py",
        # Its config: the 'Nucleus' sizes (128x128), a small batch, train and
        # validation folders of .npy files as its data_handler/npyDataOps.py
        # saves them, and its own multi-GPU switch (`multiGPU`, False by
        # default: models.py then calls multi_gpu_model(model, 2)). Its default
        # loss ('complexBCEweighted') calls its 3-argument
        # `weighted_binary_crossentropy` with 4 arguments, a TypeError at
        # `compile` under Keras 2 as well: the config's 'bce_dice' loss instead.
        setup="""
import numpy as np
import config
config.config.multiGPU = True
config.config.lossType = 'bce_dice'
config.config.img_rows = 128
config.config.img_cols = 128
config.config.batchSize = 4
config.config.train_data_path = 'train'
config.config.valid_data_path = 'val'
rng = np.random.default_rng(0)
for folder, count in (('train', 8), ('val', 4)):
    npy = os.path.join(folder, 'npyfiles')
    os.makedirs(npy, exist_ok=True)
    masks = np.zeros((count, 128, 128), dtype=np.uint8)
    masks[:, 40:90, 30:100] = 1
    points = np.zeros((count, 128, 128), dtype=np.uint8)
    points[:, 64, 64] = 1
    np.save(os.path.join(npy, 'imgs.npy'), rng.integers(0, 256, (count, 128, 128, 3), dtype=np.uint8))
    np.save(os.path.join(npy, 'masks.npy'), masks)
    np.save(os.path.join(npy, 'weightMaps.npy'), masks.astype(np.float32))
    np.save(os.path.join(npy, 'objectPoints.npy'), points)
    np.save(os.path.join(npy, 'pointOthers.npy'), np.zeros_like(points))
    np.save(os.path.join(npy, 'image_names.npy'), np.array([f'img{i}' for i in range(count)]))
""",
        devices=2,
    ),
    PublicProject(
        name="pconv_inpainting",
        repo="MathiasGruber/PConv-Keras",
        commit="7c8f2cb3ceafe4246db3b3634ede4681d3936d0a",
        licence="MIT",
        domain="image inpainting (partial convolutions)",
        idiom="multi_gpu_model inside the model class",
        files=("libs", "*.py"),
        entry="main.py",
        argv=(
            "-train",
            "data/train",
            "-validation",
            "data/val",
            "-test",
            "data/test",
            "-name",
            "pconv",
            "-batch_size",
            "1",
            "-vgg_path",
            "",
        ),
        setup="""
from PIL import Image
rng = np.random.default_rng(0)
for folder in ("data/train/a", "data/val/val", "data/test/a"):
    os.makedirs(folder, exist_ok=True)
    for i in range(2):
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(f"{folder}/{i}.png")
os.makedirs("data/test_samples", exist_ok=True)
""",
        # Its weights files hold the U-Net alone: reloaded as its own predict
        # code does, into PConvUnet's model built on one device (the model's
        # JSON records its compiled closure loss, which only the class builds).
        load_setup="""
import sys
sys.path.insert(0, os.getcwd())
from libs.pconv_model import PConvUnet


def rebuild():
    return PConvUnet(vgg_weights=None, inference_only=True).model
""",
    ),
    PublicProject(
        name="cifar10_mgpu_avolkov1",
        repo="avolkov1/keras_experiments",
        commit="333fad99dfd0d789b86c6976c5b3f9929edd6a67",
        licence="Unlicense",
        domain="image classification (CIFAR-10)",
        idiom="own make_parallel / ModelMGPU(Model) class (keras_exp.multigpu)",
        files=(
            "src/keras_exp",
            "examples/cifar/cifar10_cnn_mgpu.py",
            "examples/cifar/cifar_common.py",
            "examples/cifar/parser_common.py",
        ),
        entry="examples/cifar/cifar10_cnn_mgpu.py",
        argv=("--mgpu", "4", "--epochs", "1", "--batch_size", "4", "--checkpt", "cifar_ckpt.h5"),
        setup="sys.path.insert(0, os.path.abspath('src'))\n" + _DATASETS,
    ),
    PublicProject(
        name="vae_mgpu_avolkov1",
        repo="avolkov1/keras_experiments",
        commit="333fad99dfd0d789b86c6976c5b3f9929edd6a67",
        licence="Unlicense",
        domain="variational autoencoder (MNIST, deconvolution)",
        idiom="own make_parallel (keras_exp.multigpu), add_loss VAE",
        files=(
            "src/keras_exp",
            "examples/variational_autoencoder/vae_common.py",
            "examples/variational_autoencoder/variational_autoencoder_deconv_mgpu.py",
        ),
        entry="examples/variational_autoencoder/variational_autoencoder_deconv_mgpu.py",
        argv=("--mgpu", "4", "--epochs", "1"),
        setup="sys.path.insert(0, os.path.abspath('src'))\n" + _DATASETS,
        saves=False,
    ),
    PublicProject(
        name="mnist_make_parallel",
        repo="kuza55/keras-extras",
        commit="416853d2b1711fdfdc23e49e3f1349234e8909e6",
        licence="Apache-2.0",
        domain="image classification (MNIST)",
        idiom="the original make_parallel (tf.device towers, Lambda slices)",
        files=("utils", "examples"),
        entry="examples/mnist_cnn_multi.py",
        argv=("--extras", ".", "--gpus", "4"),
        setup=_DATASETS,
        saves=False,
    ),
    PublicProject(
        name="retinanet",
        repo="fizyr/keras-retinanet",
        commit="7ac91dfbbacce77d6d9633fc09e16cd0ee71fd5e",
        licence="Apache-2.0",
        domain="object detection (RetinaNet)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0')",
        files=("keras_retinanet",),
        entry="-m keras_retinanet.bin.train",
        argv=(
            "--multi-gpu",
            "4",
            "--multi-gpu-force",
            "--batch-size",
            "4",
            "--epochs",
            "1",
            "--steps",
            "2",
            "--no-weights",
            "--image-min-side",
            "64",
            "--image-max-side",
            "64",
            "--snapshot-path",
            "snapshots",
            "--tensorboard-dir",
            "",
            "csv",
            "ann.csv",
            "classes.csv",
        ),
        setup="""
from PIL import Image
rng = np.random.default_rng(0)
os.makedirs("img", exist_ok=True)
with open("ann.csv", "w") as ann:
    for i in range(8):
        Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(f"img/{i}.png")
        ann.write(f"img/{i}.png,8,8,40,40,thing\\n")
open("classes.csv", "w").write("thing,0\\n")
""",
        # Its snapshots reload as keras_retinanet.models.load_model reloads them.
        load_setup="from keras_retinanet import models\n"
        "custom_objects = models.backbone('resnet50').custom_objects",
    ),
    PublicProject(
        name="efficientdet",
        repo="xuannianz/EfficientDet",
        commit="030fb7e10ab69a297c7723120c2d1be856a852c0",
        licence="Apache-2.0",
        domain="object detection (EfficientDet)",
        idiom="keras.utils.multi_gpu_model on a gpu id list",
        files=("*.py", "*.pyx"),
        entry="train.py",
        argv=(
            "--gpu",
            "0,1,2,3",
            "--batch-size",
            "4",
            "--epochs",
            "1",
            "--steps",
            "2",
            "--no-snapshots",
            "--phi",
            "0",
            "csv",
            "ann.csv",
            "classes.csv",
        ),
        setup="""
from PIL import Image
rng = np.random.default_rng(0)
os.makedirs("img", exist_ok=True)
with open("ann.csv", "w") as ann:
    for i in range(8):
        Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(f"img/{i}.png")
        ann.write(f"img/{i}.png,8,8,40,40,thing\\n")
open("classes.csv", "w").write("thing,0\\n")
""",
    ),
    PublicProject(
        name="dsb2018_selim",
        repo="selimsef/dsb2018_topcoders",
        commit="867f5f357179e1c033b50cd93571859b97ad5c22",
        licence="MIT",
        domain="instance segmentation (nuclei, Data Science Bowl 2018)",
        idiom="multi_gpu_model, template under K.tf.device('/cpu:0')",
        files=("selim",),
        entry="train.py",
        cwd="selim",
        argv=(
            "--multi_gpu",
            "--gpu",
            "0,1,2,3",
            "--epochs",
            "1",
            "--batch_size",
            "4",
            "--crop_size",
            "64",
            "--steps_per_epoch",
            "2",
            "--network",
            "resnet50_2",
            "--num_workers",
            "1",
            "--images_dir",
            "../data/images",
            "--masks_dir",
            "../data/masks",
            "--labels_dir",
            "../data/labels",
            "--folds_csv",
            "../data/folds.csv",
            "--models_dir",
            "../nn_models",
            "--preprocessing_function",
            "caffe",
        ),
        timeout=900,  # its ResNet50 FPN on 4 replicas: 346 s on the loaded machine (27 Nov)
        # Stand-in nuclei: 8 images of 64x64 with 3 labelled squares each (the
        # masks' first channel is the cells, the second their touching borders),
        # folds.csv with the columns its dataset reads; fold 0 validates.
        setup="""
import cv2
import pandas as pd
rng = np.random.default_rng(0)
for folder in ("data/images", "data/masks", "data/labels", "nn_models"):
    os.makedirs(folder, exist_ok=True)
rows = []
for i in range(8):
    image_id = f"img{i}"
    labels = np.zeros((64, 64), np.uint16)
    for cell, (y, x) in enumerate(rng.integers(4, 48, (3, 2)), start=1):
        labels[y : y + 12, x : x + 12] = cell
    mask = np.zeros((64, 64, 3), np.uint8)
    mask[..., 0] = (labels > 0) * 255
    cv2.imwrite(f"data/images/{image_id}.png", rng.integers(0, 255, (64, 64, 3), dtype=np.uint8))
    cv2.imwrite(f"data/masks/{image_id}.png", mask)
    cv2.imwrite(f"data/labels/{image_id}.tif", labels)
    rows.append({"img_id": image_id, "fold": i % 4, "source": "stage1", "cluster": "a"})
pd.DataFrame(rows).to_csv("data/folds.csv", index=False)


# Pretrained weights are data: its ImageNet ResNet file (keras_resnet's layout,
# fetched with get_file) stands in as its own ResNet builder's fresh weights.
import parallel_keras
sys.path.insert(0, "selim")
from resnets import ResNet50
stand_in = os.path.abspath("ResNet-50-model.keras.h5")
parallel_keras.compat.save_weights(ResNet50(keras.Input((None, None, 3))), stand_in)
keras.utils.get_file = lambda fname, origin=None, **kwargs: stand_in
""",
    ),
    PublicProject(
        name="eyenet",
        repo="gregwchase/eyenet",
        commit="1177eddfea761ddf7973fdcc6c46fdec9cc26f6e",
        licence="MIT",
        domain="medical imaging (diabetic retinopathy)",
        idiom="multi_gpu_model(model, gpus=8) on a Sequential CNN",
        files=("src",),
        entry="cnn.py",
        cwd="src",
        setup="""
import csv
os.makedirs("labels", exist_ok=True); os.makedirs("data", exist_ok=True); os.makedirs("models", exist_ok=True)
rng = np.random.default_rng(0)
np.save("data/X_train_256_v2.npy", rng.integers(0, 255, (16, 256, 256, 3), dtype=np.uint8))
with open("labels/trainLabels_master_256_v2.csv", "w") as file:
    file.write("image,level\\n" + "".join(f"{i},{i % 3}\\n" for i in range(16)))
""",
        devices=8,
    ),
    PublicProject(
        name="minigooglenet",
        repo="reger-men/keras_multi_gpus",
        commit="be37754ab53bd577fa0f34dc51acc19bbd00b898",
        licence="MIT",
        domain="image classification (CIFAR-10, MiniGoogLeNet)",
        idiom="multi_gpu_model(model, gpus=G), template under tf.device('/cpu:0')",
        files=("*.py", "model"),
        entry="train.py",
        argv=("--output", "plot.png", "--gpus", "4"),
        setup=_DATASETS
        + "import importlib; sys.modules['pyimagesearch'] = importlib.import_module('model')\n",
        saves=False,
    ),
    PublicProject(
        name="image_captioning",
        repo="foamliu/Image-Captioning",
        commit="972a3cfb56d0b43dde4ed3752992eb99489be53d",
        licence="Apache-2.0",
        domain="image captioning (image features + LSTM)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup=_config(
            vocab_size=50,
            max_token_length=8,
            batch_size=8,
            num_train_samples=16,
            num_valid_samples=8,
            epochs=1,
        )
        + _GENERATORS,
    ),
    PublicProject(
        name="image_inpainting",
        repo="foamliu/Image-Inpainting",
        commit="718682220d53489df80b413c2047ea06e5b17924",
        licence="Apache-2.0",
        domain="image inpainting (VGG19 encoder-decoder)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup=_config(img_rows=64, img_cols=64, img_size=64, batch_size=8, epochs=1)
        + _GENERATORS
        + """
from parallel_keras.saving import atomic
os.makedirs("models", exist_ok=True)
atomic.save_weights(keras.applications.VGG19(weights=None, include_top=False), "models/vgg19_notop.h5")
from PIL import Image
os.makedirs("images", exist_ok=True)
for i in range(8):
    pixels = np.random.default_rng(i).integers(0, 255, (80, 80, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(f"images/{i}.jpg")
data_generator.image_folder = "images"
""",
        load_setup="from custom_layers.unpooling_layer import Unpooling\n"
        "custom_objects = {'Unpooling': Unpooling}",
    ),
    PublicProject(
        name="fundus_lesion",
        repo="foamliu/Fundus_Lesion2018",
        commit="bfb9516a2049f9f1c2662e963734a2746d5c3e4f",
        licence="MIT",
        domain="medical imaging (retinal OCT lesion segmentation)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup=_config(
            img_rows=64,
            img_cols=32,
            batch_size=8,
            num_train_samples=16,
            num_valid_samples=8,
            epochs=1,
        )
        + _GENERATORS
        + _PRETRAINED_VGG16.format(
            top=False, name="vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5"
        ),
        load_setup="from custom_layers.unpooling_layer import Unpooling\n"
        "custom_objects = {'Unpooling': Unpooling}",
    ),
    PublicProject(
        name="look_into_person",
        repo="foamliu/Look-Into-Person",
        commit="a18cf8aca100b63c71a6279850d8635e0bdd0478",
        licence="MIT",
        domain="semantic segmentation (human parsing, SegNet)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup="""
import scipy.io
scipy.io.savemat("human_colormap.mat", {"colormap": np.random.default_rng(0).random((20, 3))})
os.makedirs("data", exist_ok=True); np.save("data/prior_factor.npy", np.ones(20))
os.makedirs("models", exist_ok=True)
"""
        + _config(
            img_rows=64,
            img_cols=64,
            batch_size=8,
            num_train_samples=16,
            num_valid_samples=8,
            epochs=1,
        )
        # Its SegNet hard-codes 320x320 inputs (the config's sizes do not reach
        # it): one stand-in batch of 8 for training and one for validation.
        + _generators(
            train_gen="lambda: ModelShapedData(rows=8)",
            valid_gen="lambda: ModelShapedData(rows=8)",
        ),
        load_setup="from custom_layers.unpooling_layer import Unpooling\n"
        "custom_objects = {'Unpooling': Unpooling}",
    ),
    PublicProject(
        name="deep_image_matting",
        repo="foamliu/Deep-Image-Matting",
        commit="bd4c18bd3574069fdda99ed70c9519c65c503f8c",
        licence="MIT",
        domain="image matting (encoder-decoder + refinement)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        # Its encoder-decoder hard-codes 320x320x4 inputs and its loss reshapes
        # to the config's img_rows x img_cols (320, kept) and reads 11 target
        # channels (alpha, mask, image, foreground, background): one stand-in
        # batch of 8 such targets for training and one for validation.
        setup=_config(
            batch_size=8,
            num_train_samples=8,
            num_valid_samples=8,
            epochs=1,
        )
        + _generators(
            train_gen="lambda: ModelShapedData(rows=8, y=[(320, 320, 11)])",
            valid_gen="lambda: ModelShapedData(rows=8, y=[(320, 320, 11)])",
        )
        + _PRETRAINED_VGG16.format(top=True, name="vgg16_weights_tf_dim_ordering_tf_kernels.h5"),
        load_setup="from custom_layers.unpooling_layer import Unpooling\n"
        "custom_objects = {'Unpooling': Unpooling}",
    ),
    PublicProject(
        name="colorful_colorization",
        repo="foamliu/Colorful-Image-Colorization",
        commit="f498f5de1b505b056673ccca09fbb133c9e81ed1",
        licence="MIT",
        domain="image colourisation (313-bin classification)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup=_config(
            img_rows=64,
            img_cols=64,
            batch_size=8,
            num_train_samples=16,
            num_valid_samples=8,
            epochs=1,
        )
        + "os.makedirs('data', exist_ok=True); np.save('data/prior_factor.npy', np.ones(313))\n"
        + _GENERATORS,
    ),
    PublicProject(
        name="scene_understanding",
        repo="foamliu/Scene-Understanding",
        commit="e8a4c2f6ce41fcde04202e6129d9bc406d4ff200",
        licence="MIT",
        domain="semantic segmentation (SUN RGB-D scenes)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup="""
import hdf5storage
hdf5storage.savemat("seg37list.mat", {"seg37list": np.array([[f"c{i}" for i in range(37)]], dtype=object)})
os.makedirs("data", exist_ok=True); np.save("data/prior_prob.npy", np.full(38, 1 / 38))
"""
        + _config(
            img_rows=64,
            img_cols=64,
            batch_size=8,
            num_train_samples=16,
            num_valid_samples=8,
            epochs=1,
        )
        + _GENERATORS
        + _PRETRAINED_VGG16.format(top=True, name="vgg16_weights_tf_dim_ordering_tf_kernels.h5"),
        load_setup="from custom_layers.unpooling_layer import Unpooling\n"
        "custom_objects = {'Unpooling': Unpooling}",
    ),
    PublicProject(
        name="mdsr_superres",
        repo="foamliu/MDSR",
        commit="c74b0f20f3bafcfe3f5183272272f2268347dac1",
        licence="MIT",
        domain="super-resolution (multi-scale EDSR)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup=_config(img_size=16, batch_size=8, epochs=1)
        + _GENERATORS
        + "import utils; utils.get_example_numbers = lambda: (16, 8)\n",
        # Its Lambda layers call project functions (`_phase_shift`) that a
        # recorded model cannot name: its demo.py reloads the weights into
        # `build_model()`, at the size the training used.
        load_setup=_config(img_size=16)
        + "from model import build_model\n"
        + "def rebuild():\n"
        + "    return build_model()\n",
        timeout=1200,  # 80 residual blocks on 4 replicas: 273 s to train on a quiet machine (27 Nov)
    ),
    PublicProject(
        name="facenet_triplet",
        repo="foamliu/FaceNet",
        commit="8ebce490c1c873b17f117e783239784267b090dd",
        licence="Apache-2.0",
        domain="face recognition (triplet loss embeddings)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup="os.makedirs('models', exist_ok=True)\n"
        + _config(
            img_size=75, batch_size=8, num_train_samples=16, num_lfw_valid_samples=8, epochs=1
        )
        # InceptionResNetV2 at its smallest input (75x75), three inputs: one
        # stand-in batch of 8 triplets for training and one for validation.
        + _generators(DataGenSequence="lambda usage: ModelShapedData(rows=8, y=[(384,)])"),
    ),
    PublicProject(
        name="scene_classification",
        repo="foamliu/Scene-Classification",
        commit="eccaff6d72db7565b1537d12045104272a25e868",
        licence="MIT",
        domain="image classification (scenes, fine-tuned ResNet/Inception)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup="""
from PIL import Image
rng = np.random.default_rng(0)
for split in ("train", "valid"):
    for label in range(3):
        os.makedirs(f"data/{split}/{label}", exist_ok=True)
        for i in range(4):
            Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(f"data/{split}/{label}/{i}.jpg")
"""
        + _config(
            img_width=75,
            img_height=75,
            num_classes=3,
            batch_size=8,
            # InceptionResNetV2: one step of 8 images for training and one for validation.
            num_train_samples=8,
            num_valid_samples=8,
            num_epochs=1,
        ),
        probe_size=75,  # InceptionResNetV2's smallest input
        timeout=1800,  # 1332 s on 4 replicas, on the loaded machine (27 Nov)
    ),
    PublicProject(
        name="crop_disease",
        repo="foamliu/Crop-Disease-Detection",
        commit="fca9baefca48ad2fbdbc62075580fa27e5ed3531",
        licence="MIT",
        domain="image classification (crop disease, 61 classes)",
        idiom="multi_gpu_model, template under tf.device('/cpu:0'), own save callback",
        files=("*.py",),
        entry="train.py",
        setup=_config(
            img_width=75,
            img_height=75,
            batch_size=8,
            num_train_samples=16,
            num_valid_samples=8,
            num_epochs=1,
        )
        # InceptionResNetV2: one stand-in batch of 8 for training and one for
        # validation. Its own callback saves only when val_acc beats 0: the
        # validation targets are the model's predictions (real data is
        # sometimes right; random labels of 61 classes rarely are).
        + _generators(
            DataGenSequence="lambda usage: ModelShapedData(rows=8, agree=usage == 'valid')"
        ),
        timeout=1800,  # 508 s to train on 4 replicas, on the loaded machine (27 Nov)
    ),
    PublicProject(
        name="crnn_ocr",
        repo="gasparian/CRNN-OCR-lite",
        commit="d7076587fe4b76b7fc54370b37ac7f2a51d75ceb",
        licence="none",
        domain="OCR (CRNN with CTC loss)",
        idiom="multi_gpu_model(model, gpus=G) with a CTC Lambda loss",
        files=("*.py",),
        entry="train.py",
        argv=(
            "--G",
            "4",
            "--path",
            "data",
            "--training_fname",
            "train.txt",
            "--val_fname",
            "val.txt",
            "--save_path",
            "out",
            "--model_name",
            "ocr",
            "--nbepochs",
            "1",
            "--batch_size",
            "8",
            "--norm",
            "--opt",
            "sgd",
        ),
        # The folder --save_path names exists (the project makes only its
        # model_name folder in it); word images named as its data set names
        # them (<index>_<word>_<index>.png, the word read from the name), 32x100
        # grey, the size its default --imgh/--imgW read after its transpose.
        setup="""
import cv2
os.makedirs("out", exist_ok=True); os.makedirs("data", exist_ok=True)
rng = np.random.default_rng(0)
words = ("keras", "tower", "ocr", "model", "gpu", "text", "crnn", "word")
for i in range(20):
    image = rng.integers(0, 255, (32, 100), dtype=np.uint8)
    cv2.imwrite(f"data/{i}_{words[i % len(words)]}_{i}.png", np.stack([image] * 3, axis=-1))
""",
        # Its spatial transformer layer and the CTC Lambda's function, which
        # Keras 3 records by name.
        load_setup="from utils import BilinearInterpolation, ctc_lambda_func\n"
        "custom_objects = {'BilinearInterpolation': BilinearInterpolation, "
        "'ctc_lambda_func': ctc_lambda_func}",
    ),
    PublicProject(
        name="deeplabv3_segmentation",
        repo="Golbstein/Keras-segmentation-deeplab-v3.1",
        commit="e3f0daaa79a729c022da658fc86eef82a6c7ceeb",
        licence="none",
        domain="semantic segmentation (DeepLabV3+ on MobileNetV2)",
        idiom="multi_gpu_model inside create_seg_model(multi_gpu=True)",
        files=("*.py", "segmentation.ipynb"),
        driver="""
from utils import SegModel
SegClass = SegModel("data", (64, 64))
SegClass.batch_size = 8
model = SegClass.create_seg_model(net="original", n=21, load_weights=False, multi_gpu=True,
                                  backbone="mobilenetv2")
model.save_weights("deeplab.weights.h5")
""",
        # Its Lambda layers close over the SegModel object: no JSON records the
        # architecture, so the reload builds it with the project's own code.
        load_setup="""
def rebuild():
    from utils import SegModel
    segments = SegModel("data", (64, 64))
    return segments.create_seg_model(net="original", n=21, load_weights=False, multi_gpu=False,
                                     backbone="mobilenetv2")
""",
    ),
    PublicProject(
        name="data_parallel_mnist_rossum",
        repo="rossumai/keras-multi-gpu",
        commit="07776a8d74a69cd0c96241d74af5756e498eba74",
        licence="MIT",
        domain="image classification (MNIST CNN)",
        idiom="own DataParallelModel(keras.Model) class (bzamecnik)",
        files=("keras_tf_multigpu",),
        entry="keras_tf_multigpu/examples/bzamecnik/data_parallel_mnist_cnn.py",
        # The script counts its GPUs in CUDA_VISIBLE_DEVICES, as run on 4 GPUs.
        setup="sys.path.insert(0, os.path.abspath('keras_tf_multigpu/bzamecnik'))\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0,1,2,3'\n" + _DATASETS,
        saves=False,
    ),
    PublicProject(
        name="cifar10_kuza55_rossum",
        repo="rossumai/keras-multi-gpu",
        commit="07776a8d74a69cd0c96241d74af5756e498eba74",
        licence="MIT",
        domain="image classification (CIFAR-10 CNN, ImageDataGenerator)",
        idiom="kuza55 make_parallel with a parameter-server device",
        files=("keras_tf_multigpu",),
        entry="keras_tf_multigpu/examples/kuza55/cifar10_cnn_multigpu.py",
        setup=_DATASETS,
        saves=False,
    ),
    PublicProject(
        name="colorize_gan",
        repo="emilwallner/Coloring-greyscale-images",
        commit="00524a569b4a14631420b11617b8122919f58eac",
        licence="MIT",
        domain="GAN (image colourisation, pix2pixHD-style)",
        idiom="multi_gpu_model on each discriminator; save_model template",
        files=("GAN-version/*.py",),
        entry="colorize_base.py",
        cwd="GAN-version",
        timeout=900,  # three discriminators on 4 replicas: 1589 s in all on the loaded machine (27 Nov)
        # Its own loader's custom objects (models/pix2pixHD/load_trained_models.py).
        load_setup="import sys\n"
        "sys.path.insert(0, 'GAN-version')\n"
        "from models.utils.instance_normalization import InstanceNormalization\n"
        "from models.utils.sn import ConvSN2D, DenseSN\n"
        "from models.utils.attention import Attention\n"
        "def zero_loss(y_true, y_pred):\n"
        "    return keras.ops.zeros_like(y_true, dtype=keras.backend.floatx())\n"
        "custom_objects = {'InstanceNormalization': InstanceNormalization, "
        "'ConvSN2D': ConvSN2D, 'DenseSN': DenseSN, 'Attention': Attention, 'zero_loss': zero_loss}",
        # Its folders of colour images (six: it draws batches of five plus one).
        setup="""
from PIL import Image
rng = np.random.default_rng(0)
for folder in ("GAN-version/Train", "GAN-version/Test"):
    os.makedirs(folder, exist_ok=True)
    for i in range(6):
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(f"{folder}/{i}.jpg")
""",
    ),
    PublicProject(
        name="neurowriter",
        repo="albarji/neurowriter",
        commit="503c2db17c90adaa29fedfea745d1b4237ec7a74",
        licence="MIT",
        domain="text generation (LSTM/WaveNet language models)",
        idiom="own make_parallel copy (tf.device towers)",
        files=("neurowriter", "*.py", "*.txt"),
        entry="train.py",
        argv=(
            "corpus.txt",
            "multilinetxt",
            "enc.json",
            "model.h5",
            "--trials",
            "10",
            "--maxepochs",
            "1",
            "--architecture",
            "lstm",
        ),
        setup="open('corpus.txt', 'w').write('the quick brown fox\\njumps over the lazy dog\\n' * 30)\n",
    ),
    PublicProject(
        name="minos",
        repo="guybedo/minos",
        commit="4e4f0ac328bee6d668ab60db868d6b03db642b82",
        licence="Apache-2.0",
        domain="architecture search (evolutionary, dense nets)",
        idiom="own multi-GPU model builder (tf.device towers, merged on CPU)",
        files=("minos", "examples"),
        entry="examples/ga/dataset.py",
        saves=False,
    ),
)

# What stops each project (first failure; docs/migrate.md has the table): measured on
# main at b565258, and on branches corpus (26 Nov 21:25-22:40 UTC) and corpus2 (27 Nov
# 00:40-01:50 UTC) for the projects they re-measured.
_BLOCKED_ON = {
    "chexnet": "",
    "keras_yolo3": "",
    "textgenrnn": "",
    "nuclick": "",
    "pconv_inpainting": "",
    "cifar10_mgpu_avolkov1": "",
    "vae_mgpu_avolkov1": "",
    "mnist_make_parallel": "",
    "retinanet": "",
    "efficientdet": "a project Model subclass called on [tensor, Python int] whose call counts its own calls",
    "dsb2018_selim": "",
    "eyenet": "",
    "minigooglenet": "",
    "image_captioning": "",
    "image_inpainting": "",
    "fundus_lesion": "",
    "look_into_person": "",
    "deep_image_matting": "",
    "colorful_colorization": "",
    "scene_understanding": "",
    "mdsr_superres": "",
    "facenet_triplet": "harness: InceptionResNetV2 at 75x75 on three inputs did not finish in 2400 s on the loaded 2-core machine",
    "scene_classification": "",
    "crop_disease": "",
    "crnn_ocr": "",
    "deeplabv3_segmentation": "",
    "data_parallel_mnist_rossum": "",
    "cifar10_kuza55_rossum": "",
    "colorize_gan": "",
    "neurowriter": "",
    "minos": "",
}
PROJECTS = tuple(
    dataclasses.replace(project, blocked_on=_BLOCKED_ON.get(project.name, ""))
    for project in PROJECTS
)
