# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/gpu_count.py: TF1 GPU-count idioms -> the devices TF 2 sees."""

from __future__ import annotations

import pytest

from parallel_keras.migrate.rules import gpu_count
from tests.migrate.helpers import changes, check_rewrite, check_rules

_HEAD = (
    "import tensorflow as tf\nfrom keras import backend as K\n"
    "from tensorflow.python.client import device_lib\n"
)
# Once its only `K.` use is rewritten, the backend import goes.
_HEAD_WITHOUT_K = _HEAD.replace("from keras import backend as K\n", "")
_ADDED = "import parallel_keras.devices\n\n"
# The rewritten comprehension is longer than any line of these snippets: black
# lays it out (one clause a line), one level deeper inside `len(...)`.
_LAID_OUT = """\
[
    {item}
    for device in {tf}.config.list_logical_devices('GPU')
    or (
        {tf}.config.list_logical_devices('CPU')
        if parallel_keras.devices.gpus_are_simulated()
        else []
    )
]"""


def _laid_out(item: str = "device.name", indent: str = "", tf: str = "tf") -> str:
    return _LAID_OUT.format(item=item, tf=tf).replace("\n", "\n" + indent)


_NAMES = _laid_out()
_NAMES_IN_LEN = f"len(\n    {_laid_out(indent='    ')}\n)"


def _listed(listing):
    return (
        f"the GPUs listed by `{listing}` -> the logical GPUs, or the simulated devices "
        "parallel_keras replicates on when there is no GPU"
    )


REWRITES = {
    "keras_backend_device_lib": (
        _HEAD
        + "gpus = [x.name for x in K.device_lib.list_local_devices() if x.name[:11] == '/device:GPU']\n",
        _HEAD_WITHOUT_K + _ADDED + f"gpus = {_NAMES}\n",
        [(4, _listed("K.device_lib.list_local_devices()"))],
    ),
    "get_available_gpus": (
        _HEAD + "G = len(K.tensorflow_backend._get_available_gpus())\n",
        _HEAD_WITHOUT_K + _ADDED + f"G = {_NAMES_IN_LEN}\n",
        [
            (
                4,
                "`K.tensorflow_backend._get_available_gpus()` -> the names of the logical "
                "GPUs, or of the simulated devices when there is no GPU (Keras 3 has no "
                "TensorFlow backend module)",
            )
        ],
    ),
    "session_devices_names": (
        _HEAD
        + "gpus = [d.name for d in K.get_session().list_devices() if d.device_type == 'GPU']\n",
        _HEAD_WITHOUT_K + _ADDED + f"gpus = {_NAMES}\n",
        [(4, _listed("K.get_session().list_devices()"))],
    ),
    "local_devices_objects": (
        _HEAD + "n = len([x for x in device_lib.list_local_devices() if 'GPU' in x.device_type])\n",
        _HEAD + _ADDED + f"n = len(\n    {_laid_out('device', '    ')}\n)\n",
        [(4, _listed("device_lib.list_local_devices()"))],
    ),
    "listing_held_in_a_name": (
        _HEAD + "protos = device_lib.list_local_devices()\n"
        "names = [p.name for p in protos if p.device_type == 'GPU']\n",
        _HEAD + _ADDED + "protos = device_lib.list_local_devices()\n" + f"names = {_NAMES}\n",
        [(5, _listed("protos"))],
    ),
    "session_listing_alone": (
        _HEAD + "everything = K.get_session().list_devices()\n",
        _HEAD_WITHOUT_K + "everything = tf.config.list_logical_devices()\n",
        [
            (
                4,
                "`K.get_session().list_devices()` -> `tf.config.list_logical_devices()` (TF 2 has no sessions)",
            )
        ],
    ),
    # A comprehension the logical devices cannot stand for keeps its own
    # filter; only the session, which TF 2 lacks, is replaced.
    "session_listing_with_another_condition": (
        _HEAD + "s = [d.name for d in K.get_session().list_devices() "
        "if d.device_type == 'GPU' and 'XLA' not in d.name]\n",
        # Longer than the snippet's line: black's layout within it.
        _HEAD_WITHOUT_K + "s = [\n    d.name for d in tf.config.list_logical_devices() "
        "if d.device_type == 'GPU' and 'XLA' not in d.name\n]\n",
        [
            (
                4,
                "`K.get_session().list_devices()` -> `tf.config.list_logical_devices()` (TF 2 has no sessions)",
            )
        ],
    ),
    "tensorflow_imported_when_the_script_has_none": (
        "from keras import backend as K\nG = len(K.tensorflow_backend._get_available_gpus())\n",
        "import parallel_keras.devices\nimport tensorflow\n\n"
        + f"G = {_NAMES_IN_LEN.replace('tf.', 'tensorflow.')}\n",
        [
            (
                2,
                "`K.tensorflow_backend._get_available_gpus()` -> the names of the logical "
                "GPUs, or of the simulated devices when there is no GPU (Keras 3 has no "
                "TensorFlow backend module)",
            )
        ],
    ),
}


@pytest.mark.parametrize("before, after, recorded", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after, recorded):
    result = check_rules(before, after, gpu_count.GpuCountRule)
    assert changes(result, gpu_count.RULE) == recorded
    assert not result.report.flags


@pytest.mark.parametrize(
    "source",
    [
        # CPUs, not GPUs.
        _HEAD
        + "cpus = [x.name for x in device_lib.list_local_devices() if x.device_type == 'CPU']\n",
        # Another attribute than the name: logical devices have no such thing.
        _HEAD + "descs = [x.physical_device_desc for x in device_lib.list_local_devices() "
        "if x.device_type == 'GPU']\n",
        # A second filter the logical GPUs would drop.
        _HEAD + "k80 = [x.name for x in device_lib.list_local_devices() "
        "if x.device_type == 'GPU' if 'K80' in x.physical_device_desc]\n",
        # Physical devices of TF 2 itself.
        _HEAD + "gpus = tf.config.list_physical_devices('GPU')\n",
    ],
)
def test_left_alone(source):
    result = check_rules(source, source, gpu_count.GpuCountRule)
    assert not result.report.changes and not result.report.flags


_GPU_LOOP = """\
from tensorflow.python.client import device_lib


def get_available_gpus(as_ids=False):
    local_device_protos = device_lib.list_local_devices()
    gpus_list = []
    for dproto in local_device_protos:
        if dproto.device_type != 'GPU':
            continue
        gpus_list.append(int(dproto.name.split(':')[-1]) if as_ids else dproto.name)
    return gpus_list


def count_gpus():
    return sum(1 for d in device_lib.list_local_devices() if d.device_type == 'GPU')


def gpus_by_loop():
    found = []
    for d in device_lib.list_local_devices():
        if d.device_type == 'GPU':
            found.append(d.name)
    return found


ngpus = len(get_available_gpus())
"""


def test_a_gpu_list_built_by_a_for_loop_sees_the_devices_multi_gpu_model_replicates_on():
    import parallel_keras

    namespace: dict = {}
    exec(_GPU_LOOP, namespace)  # noqa: S102
    assert namespace["ngpus"] == 0  # Physical devices: the simulated ones are not listed.
    result = check_rules(
        _GPU_LOOP,
        _GPU_LOOP.replace(
            # Headers longer than the file's lines: black's layout of each.
            "for dproto in local_device_protos:",
            f"for dproto in {_laid_out('device', '    ', 'tensorflow')}:",
        )
        .replace(
            "if dproto.device_type != 'GPU':",
            "if (\n"
            "            dproto.device_type != 'GPU'\n"
            "            and not parallel_keras.devices.gpus_are_simulated()\n"
            "        ):",
        )
        .replace(
            "for d in device_lib.list_local_devices():",
            f"for d in {_laid_out('device', '    ', 'tensorflow')}:",
        )
        .replace(
            "        if d.device_type == 'GPU':",
            "        if (d.device_type == 'GPU' or parallel_keras.devices.gpus_are_simulated()):",
        )
        .replace(
            "from tensorflow.python.client import device_lib\n",
            "from tensorflow.python.client import device_lib\n"
            "import parallel_keras.devices\nimport tensorflow\n",
        ),
        gpu_count.GpuCountRule,
    )
    # The generator expression's own test stays: only loops were asked for here.
    assert "sum(1 for d in device_lib.list_local_devices()" in result.migrated
    exec(result.migrated, namespace)  # noqa: S102
    expected = parallel_keras.devices.available_devices()
    assert len(expected) == 4
    assert namespace["ngpus"] == 4
    assert namespace["get_available_gpus"](as_ids=True) == [0, 1, 2, 3]
    assert len(namespace["gpus_by_loop"]()) == 4


_BACKEND_DEVICE_LIB = """\
import keras.backend as K

gpus = [x.name for x in K.device_lib.list_local_devices() if x.name[:4] == '/gpu']
names = [d.name for d in K.device_lib.list_local_devices() if d.name.startswith('/device:GPU')]
"""


def test_keras2_backends_device_lib_filtered_by_a_gpu_name_prefix_lists_the_replica_devices():
    """dsb2018_selim: Keras 2's backend module held TF's device_lib (`K.device_lib`)."""
    import keras

    import parallel_keras

    assert not hasattr(keras.backend, "device_lib")  # Keras 3: AttributeError as it was
    after = (
        f"import parallel_keras.devices\nimport tensorflow\n\ngpus = {_NAMES}\nnames = {_NAMES}\n"
    )
    result = check_rules(
        _BACKEND_DEVICE_LIB, after.replace("tf.", "tensorflow."), gpu_count.GpuCountRule
    )
    assert not result.report.flags
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    assert len(parallel_keras.devices.available_devices()) == 4
    assert len(namespace["gpus"]) == 4  # the simulated devices multi_gpu_model replicates on
    assert namespace["gpus"] == namespace["names"]
    assert all(name.endswith(f"CPU:{i}") for i, name in enumerate(namespace["gpus"]))


def _local_device_names() -> list[str]:
    """What Keras 2's `K.device_lib.list_local_devices()` listed: TF's device_lib.

    The canary tests/internals/test_device_lib.py checks this is TensorFlow's.
    """
    from parallel_keras import _internals

    return [device.name for device in _internals.list_local_devices()]


_COMPAT_LINE = (
    "`{old}` -> `parallel_keras.compat.device_lib`: " + gpu_count.DEVICE_LIB_WHY,
    gpu_count.DEVICE_LIB_MODERN,
)

# Keras 2 scripts that use `K.device_lib` for something other than a GPU list.
DEVICE_LIB_USES = {
    "printed_count": (
        "import keras.backend as K\n\nn = len(K.device_lib.list_local_devices())\nprint(n)\n",
        "import parallel_keras\n\n"
        "n = len(parallel_keras.compat.device_lib.list_local_devices())\nprint(n)\n",
        "K.device_lib",
    ),
    "listing_kept_in_a_name": (
        "from keras import backend as K\n\ndevices = K.device_lib.list_local_devices()\n"
        "names = [d.name for d in devices]\n",
        "import parallel_keras\n\ndevices = parallel_keras.compat.device_lib.list_local_devices()\n"
        "names = [d.name for d in devices]\n",
        "K.device_lib",
    ),
    "module_passed_around": (
        "from keras.backend import tensorflow_backend as KTF\n\nlib = KTF.device_lib\n"
        "names = [d.name for d in lib.list_local_devices()]\n",
        "import parallel_keras\n\nlib = parallel_keras.compat.device_lib\n"
        "names = [d.name for d in lib.list_local_devices()]\n",
        "KTF.device_lib",
    ),
    "imported_from_the_tensorflow_backend": (
        "from keras.backend.tensorflow_backend import device_lib\n\n"
        "names = [d.name for d in device_lib.list_local_devices()]\n",
        "from parallel_keras.compat import device_lib\n\n"
        "names = [d.name for d in device_lib.list_local_devices()]\n",
        "keras.backend.tensorflow_backend.device_lib",
    ),
}


@pytest.mark.parametrize("name", sorted(DEVICE_LIB_USES))
def test_keras2_backends_device_lib_used_otherwise_runs_as_tensorflows_device_lib(name, capsys):
    before, after, old = DEVICE_LIB_USES[name]
    namespace: dict = {}
    with pytest.raises((AttributeError, ImportError)):  # Keras 3, unmigrated.
        exec(before, namespace)  # noqa: S102
    result = check_rewrite(before, after)
    compat_lines = [
        (change.message, change.modern)
        for change in result.report.changes
        if change.modern is not None
    ]
    assert compat_lines == [(_COMPAT_LINE[0].format(old=old), _COMPAT_LINE[1])]
    assert not result.report.flags
    exec(result.migrated, namespace)  # noqa: S102
    expected = _local_device_names()
    assert expected[0] == "/device:CPU:0"
    if "names" in namespace:
        assert namespace["names"] == expected
    else:
        assert namespace["n"] == len(expected)
        assert capsys.readouterr().out == f"{len(expected)}\n"


def test_a_gpu_list_and_another_use_of_keras2_device_lib_in_one_script():
    """The GPU list still becomes the replica devices; the other use, TF's listing."""
    import parallel_keras

    before = (
        "from keras import backend as K\n\n"
        "gpus = [x.name for x in K.device_lib.list_local_devices() if x.device_type == 'GPU']\n"
        "everything = [x.name for x in K.device_lib.list_local_devices()]\n"
    )
    after = (
        "import parallel_keras\nimport parallel_keras.devices\nimport tensorflow\n\n"
        f"gpus = {_laid_out(tf='tensorflow')}\n"
        "everything = [x.name for x in parallel_keras.compat.device_lib.list_local_devices()]\n"
    )
    result = check_rewrite(before, after)
    assert [change.line for change in result.report.changes if change.modern is not None] == [4]
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    assert len(namespace["gpus"]) == len(parallel_keras.devices.available_devices()) == 4
    assert namespace["everything"] == _local_device_names()
