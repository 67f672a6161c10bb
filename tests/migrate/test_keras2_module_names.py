# SPDX-License-Identifier: Apache-2.0
"""A name imported from a Keras 2 module file is rewritten on the first run.

Keras 2 scripts import from module files Keras 3 removed
(`from keras.layers.core import Dense`). The imports rule moves the import
to Keras 3's home in the same run, and every other rule sees the name as
Keras 3 spells it (`Context.qualified_name`, `keras2_modules.keras3_name`):
the same snippet migrates to the same code whichever spelling it imports,
and a second run changes nothing.
"""

from __future__ import annotations

import pytest

from parallel_keras import migrate
from parallel_keras.migrate import context, keras2_modules
from parallel_keras.migrate.rules import imports

_TF = "import tensorflow as tf\n"

# id -> (Keras 3 import, the same names from Keras 2 module files, code a rule rewrites).
CASES = {
    # rules/layer_api.py: a subclass's own kernel behind Keras 3's read-only property.
    "conv_subclass_kernel": (
        "from keras.layers import Conv2D",
        "from keras.layers.convolutional import Conv2D",
        "class MyConv(Conv2D):\n"
        "    def build(self, input_shape):\n"
        "        self.kernel = self.add_weight(shape=(3, 3, 1, 4), name='kernel')\n"
        "        self.built = True\n",
    ),
    # rules/layer_api.py: a Dense subclass with its own weight saves as Keras 2 did.
    "dense_subclass_weight": (
        "from keras.layers import Dense",
        "from keras.layers.core import Dense",
        "class ScaledDense(Dense):\n"
        "    def build(self, input_shape):\n"
        "        super().build(input_shape)\n"
        "        self.scale = self.add_weight(shape=(1,), name='scale')\n",
    ),
    # rules/layer_api.py: `/` in a layer name, on Keras 2's Input of engine.input_layer.
    "input_slash_name": (
        "from keras.layers import Input",
        "from keras.engine.input_layer import Input",
        "inputs = Input(shape=(3,), name='in/put')\n",
    ),
    # rules/devices.py: a layer (engine.topology's InputLayer) called under tf.device.
    "layer_under_device": (
        "from keras.layers import InputLayer",
        "from keras.engine.topology import InputLayer",
        "entry = InputLayer(input_shape=(3,))\nwith tf.device('/cpu:0'):\n    y = entry(x)\n",
    ),
    # rules/batch_shapes.py: Keras 2's Sequential of engine.sequential.
    "sequential_batch_input_shape": (
        "from keras.models import Sequential\nfrom keras.layers import Dense",
        "from keras.engine.sequential import Sequential\nfrom keras.layers.core import Dense",
        "model = Sequential([Dense(4, batch_input_shape=(None, 3)), Dense(2)])\n",
    ),
    # rules/saving.py: save_format= of Keras 2's engine.saving.save_model.
    "save_model_save_format": (
        "from keras.models import save_model",
        "from keras.engine.saving import save_model",
        "save_model(model, 'm.h5', save_format='h5')\n",
    ),
    # rules/tf1_names.py: TF1 names through the backend module's `tf`.
    "tensorflow_backend_tf": (
        "from keras import backend as KTF",
        "from keras.backend import tensorflow_backend as KTF",
        "y = KTF.tf.to_float(x)\n",
    ),
    # rules/keras1_merge.py (and the import it leaves): Keras 1's merge function.
    "keras1_merge": (
        "from keras.layers import merge",
        "from keras.layers.merge import merge",
        "y = merge([a, b], mode='concat', concat_axis=1)\n",
    ),
    # Rules that already matched the Keras 2 spelling (their own lists, or a
    # `keras.layers.` prefix): they must keep doing so.
    "embedding_input_length": (
        "from keras.layers import Embedding",
        "from keras.layers.embeddings import Embedding",
        "net = Embedding(input_dim=50, output_dim=8, input_length=6)(inputs)\n",
    ),
    "conv_border_mode": (
        "from keras.layers import Convolution2D",
        "from keras.layers.convolutional import Convolution2D",
        "y = Convolution2D(32, 3, 3, border_mode='same')(x)\n",
    ),
    "model_input_output": (
        "from keras.models import Model",
        "from keras.engine.training import Model",
        "model = Model(input=inputs, output=net)\n",
    ),
    "print_summary": (
        "from keras.utils import print_summary",
        "from keras.utils.layer_utils import print_summary",
        "print_summary(model)\n",
    ),
    "sequence_subclass": (
        "from keras.utils import Sequence",
        "from keras.utils.data_utils import Sequence",
        "class Batches(Sequence):\n"
        "    def __init__(self, x):\n"
        "        self.x = x\n\n"
        "    def __len__(self):\n"
        "        return 1\n\n"
        "    def __getitem__(self, i):\n"
        "        return self.x\n",
    ),
}


def _migrate(source: str) -> migrate.MigrationResult:
    return migrate.migrate_source(source, "train.py")


def _code(text: str) -> str:
    """`text` without its import lines (the one place the two spellings differ)."""
    return "".join(
        line for line in text.splitlines(keepends=True) if not line.startswith(("from ", "import "))
    )


def _changes(result: migrate.MigrationResult) -> list[tuple[str, str]]:
    """(rule, message) of each change and flag but the imports rule's."""
    return [
        (change.rule, change.message)
        for change in [*result.report.changes, *result.report.flags]
        if change.rule != imports.RULE
    ]


@pytest.mark.parametrize("keras3_import, keras2_import, code", CASES.values(), ids=CASES.keys())
def test_a_name_from_a_keras2_module_file_is_rewritten_on_the_first_run(
    keras3_import, keras2_import, code
):
    keras3 = _migrate(f"{_TF}{keras3_import}\n{code}")
    keras2 = _migrate(f"{_TF}{keras2_import}\n{code}")
    assert _code(keras3.migrated) != _code(f"{_TF}{code}")  # The rule rewrites the code.
    assert _code(keras2.migrated) == _code(keras3.migrated)
    assert _changes(keras2) == _changes(keras3)
    again = _migrate(keras2.migrated)
    assert again.migrated == keras2.migrated
    assert not again.report.changes


def test_keras1_merge_imported_from_the_merge_module_is_removed_with_its_calls():
    result = _migrate("from keras.layers.merge import merge\ny = merge([a, b], mode='sum')\n")
    assert result.migrated == "import keras\n\ny = keras.layers.add([a, b])\n"
    assert (
        imports.RULE,
        "`from keras.layers.merge import merge` removed: Keras 1's merge() calls become "
        "the keras.layers function of their mode",
    ) in [(change.rule, change.message) for change in result.report.changes]


@pytest.mark.parametrize(
    "written, keras3",
    [
        ("keras.layers.embeddings.Embedding", "keras.layers.Embedding"),
        ("keras.engine.training.Model", "keras.models.Model"),
        ("keras.engine.training.Model.fit", "keras.models.Model.fit"),
        ("keras.engine.topology.Input", "keras.layers.Input"),
        ("keras.engine.Model", "keras.models.Model"),  # NAME_HOMES, not keras.layers.
        ("tensorflow.keras.layers.core.Dense", "keras.layers.Dense"),
        ("keras.objectives.mse", "keras.losses.mse"),
        ("keras.utils.generic_utils.Progbar", "keras.utils.Progbar"),
        (
            "keras.utils.conv_utils.normalize_tuple",
            "parallel_keras.compat.conv_utils.normalize_tuple",
        ),
        ("keras.layers.experimental.preprocessing.RandomFlip", "keras.layers.RandomFlip"),
        # Not names of a moved module: no Keras 3 spelling to give.
        ("keras.layers.Embedding", None),
        ("keras.engine.topology", None),  # The moved module itself.
        ("keras.layers.merge", None),  # Keras 1's merge function (a module too).
        ("tensorflow.compat.v1.Session", None),
        ("numpy.array", None),
    ],
)
def test_keras3_name(written, keras3):
    assert keras2_modules.keras3_name(written) == keras3


class _Names(context.Rule):
    """Records what a rule sees of each call's callee."""

    def __init__(self):
        self.seen: list[tuple[str | None, str | None, set[str]]] = []

    def visit_Call(self, ctx, node):
        self.seen.append(
            (
                ctx.qualified_name(node.func),
                ctx.written_qualified_name(node.func),
                {name.name for name in ctx.qualified_names(node.func)},
            )
        )


def test_rules_see_keras3_names_and_the_imports_rule_the_written_ones():
    names = _Names()
    source = (
        "from keras.layers.core import Dense\n"
        "from tensorflow.python.keras.optimizers import Adadelta\n"
        "import tensorflow.compat.v1 as tf\n"
        "Dense(4)\nAdadelta()\ntf.Session()\n"
    )
    migrate.migrate_source(source, "train.py", rules=[names])
    assert names.seen == [
        ("keras.layers.Dense", "keras.layers.core.Dense", {"keras.layers.Dense"}),
        # TensorFlow's copies keep their spelling in qualified_names (tf.keras's
        # optimizers are told from standalone Keras 2's by it).
        (
            "keras.optimizers.Adadelta",
            "keras.optimizers.Adadelta",
            {"tensorflow.python.keras.optimizers.Adadelta"},
        ),
        ("tensorflow.Session", "tensorflow.Session", {"tensorflow.compat.v1.Session"}),
    ]


def test_names_of_a_moved_module_keep_their_import_rewrite():
    # The imports rule reads the written spelling: the import itself moves.
    result = _migrate("from keras.layers.embeddings import Embedding\nEmbedding(10, 4)\n")
    assert result.migrated == "from keras.layers import Embedding\nEmbedding(10, 4)\n"
