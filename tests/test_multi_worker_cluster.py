# SPDX-License-Identifier: Apache-2.0
"""Cluster description, chief-only write paths and sharding, in-process.

No strategy is created here: these are the parts that read TF_CONFIG. The
multi-worker runs themselves are in test_multi_worker.py.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from parallel_keras.cluster import membership, settings, strategy, writes
from parallel_keras.multi_worker import sharding, worker_env


def _tf_config(monkeypatch, cluster_spec, task_type, index):
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps({"cluster": cluster_spec, "task": {"type": task_type, "index": index}}),
    )


@pytest.mark.parametrize(
    "spec, task_type, index, expected",
    [
        ({"worker": ["a:1", "b:1"]}, "worker", 0, (0, 2, True)),
        ({"worker": ["a:1", "b:1"]}, "worker", 1, (1, 2, False)),
        ({"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "chief", 0, (0, 3, True)),
        ({"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "worker", 0, (1, 3, False)),
        ({"worker": ["a:1"]}, "worker", 0, (0, 1, True)),
    ],
)
def test_worker_info_reads_tf_config(monkeypatch, spec, task_type, index, expected):
    _tf_config(monkeypatch, spec, task_type, index)
    info = membership.worker_info()
    assert (info.worker_index, info.num_workers, info.is_chief) == expected
    assert membership.is_multi_worker() == (expected[1] > 1)


def test_no_tf_config_is_one_worker_and_initialize_does_nothing(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert membership.worker_info() == membership.WorkerInfo("worker", 0, 0, 1, True)
    assert strategy.initialize() is None
    assert strategy.multi_worker_strategy_or_none(["/cpu:0"]) is None


@pytest.mark.parametrize(
    "raw, match",
    [
        ("{not json", "TF_CONFIG must be JSON"),
        (
            json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}),
            "must list this process's task",
        ),
    ],
)
def test_invalid_tf_config_is_explained(monkeypatch, raw, match):
    monkeypatch.setenv("TF_CONFIG", raw)
    with pytest.raises(ValueError, match=match):
        membership.worker_info()


def test_initialize_after_tensorflow_started_says_how_to_fix(monkeypatch):
    # conftest already started TensorFlow (simulated devices).
    _tf_config(monkeypatch, {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "worker", 0)
    with pytest.raises(RuntimeError, match="parallel-keras launch"):
        strategy.initialize()


@pytest.mark.parametrize("raw", ["0", "-3", "soon"])
def test_collective_timeout_must_be_positive(raw):
    environ = {worker_env.COLLECTIVE_TIMEOUT_ENV: raw}
    with pytest.raises(ValueError, match="positive number of seconds"):
        worker_env.settings_from_environ(environ)


def test_write_path_is_unchanged_on_the_chief(monkeypatch, tmp_path):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    target = str(tmp_path / "ckpt" / "{epoch}.keras")
    assert writes.is_chief()
    assert writes.write_path(target) == target


def test_non_chief_writes_into_a_temp_folder_removed_by_cleanup(monkeypatch, tmp_path):
    _tf_config(monkeypatch, {"worker": ["a:1", "b:1"]}, "worker", 1)
    environ = {worker_env.WORKER_TEMP_ROOT_ENV: str(tmp_path / "root")}
    monkeypatch.setattr(settings, "_CURRENT", worker_env.settings_from_environ(environ))
    (tmp_path / "root").mkdir()
    target = writes.write_path(str(tmp_path / "ckpt" / "epoch{epoch}.weights.h5"))
    assert not writes.is_chief()
    assert target.startswith(str(tmp_path / "root" / "parallel_keras_worker1_"))
    assert target.endswith(os.path.join("ckpt", "epoch{epoch}.weights.h5"))
    with open(target.format(epoch=1), "w") as file:
        file.write("x")
    writes.cleanup()
    assert os.listdir(tmp_path / "root") == []
    assert not (tmp_path / "ckpt").exists()


def test_shard_by_data_sets_the_data_policy_and_keeps_the_elements():
    dataset = sharding.shard_by_data(tf.data.Dataset.range(8).batch(4))
    assert (
        dataset.options().experimental_distribute.auto_shard_policy
        == tf.data.experimental.AutoShardPolicy.DATA
    )
    assert np.concatenate(list(dataset.as_numpy_iterator())).tolist() == list(range(8))
    with pytest.raises(TypeError, match="tf.data.Dataset"):
        sharding.shard_by_data(np.arange(3))
