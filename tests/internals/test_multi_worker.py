# SPDX-License-Identifier: Apache-2.0
"""Canaries for `parallel_keras._internals.multi_worker` (TF 2.21 / Keras 3.15).

Each fails loudly when an upgrade changes what the launcher relies on for
multi-worker start-up. Whether Keras still needs the scalar-mean reduction
workaround is reported by `tests/test_multi_worker.py`.
"""

import inspect
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from parallel_keras import testing

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

_ARMED_BEFORE_START = """
from parallel_keras import _internals
import keras
seen = []
_internals.run_before_tf_starts(lambda: seen.append(_internals.tf_runtime_initialized()))
assert seen == [], "importing Keras started TensorFlow"
keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
assert seen == [False], seen
assert _internals.tf_runtime_initialized()
listed = {entry.target: entry for entry in _internals.interceptions.installed()}
entry = listed["tensorflow.python.eager.context.Context.ensure_initialized"]
assert entry.by == "parallel_keras._internals.multi_worker", entry
print("OK")
"""


def test_callback_runs_just_before_tensorflow_starts():
    """`Context.ensure_initialized` is still where TensorFlow starts (and the
    hook on it is listed with what parallel_keras installed)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    process = subprocess.run(
        [sys.executable, "-c", _ARMED_BEFORE_START],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 0 and "OK" in process.stdout, process.stderr[-3000:]


def test_tf_runtime_initialized_turns_true_when_a_tensor_is_created():
    """`context.context()._context_handle` is None until TensorFlow starts."""
    process = testing.run_python(
        """
        from parallel_keras import _internals
        import tensorflow as tf
        before = _internals.tf_runtime_initialized()
        tf.constant(1.0)
        print("RESULT", before, _internals.tf_runtime_initialized())
        """,
    )
    assert process.stdout.split()[-3:] == ["RESULT", "False", "True"], process.stderr[-3000:]


def test_mwms_constructor_picks_local_devices_through_initialize_local_devices():
    """`multi_worker_mirrored_strategy` swaps this method during construction."""
    from tensorflow.python.distribute import collective_all_reduce_strategy as mwms_lib

    extended = mwms_lib.CollectiveAllReduceExtended
    method = extended.__dict__.get("_initialize_local_devices")
    assert inspect.isfunction(method)
    assert list(inspect.signature(method).parameters) == [
        "self",
        "cluster_resolver",
        "worker_device",
    ]
    # The constructor reaches it: __init__ -> _initialize_strategy ->
    # _initialize_local / _initialize_multi_worker -> _initialize_local_devices.
    assert "self._initialize_strategy(" in inspect.getsource(extended.__init__)
    strategy_source = inspect.getsource(extended._initialize_strategy)
    assert "self._initialize_local(" in strategy_source
    assert "self._initialize_multi_worker(" in strategy_source
    for step in (extended._initialize_local, extended._initialize_multi_worker):
        assert "self._initialize_local_devices(" in inspect.getsource(step), step.__name__
    assert tf.distribute.MultiWorkerMirroredStrategy is mwms_lib.CollectiveAllReduceStrategy
    assert "CollectiveAllReduceExtended(" in inspect.getsource(
        mwms_lib.CollectiveAllReduceStrategy.__init__
    )
