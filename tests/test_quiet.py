# SPDX-License-Identifier: Apache-2.0
"""`parallel_keras.quiet_tensorflow()`: no TensorFlow log lines, errors kept."""

import os
import subprocess
import sys

import pytest

# Every test here starts child processes (the subprocess tier).
pytestmark = pytest.mark.subprocess

_ENV = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=_ENV
    )


def test_tensorflow_starts_and_distributes_without_log_lines():
    process = _python(
        "import parallel_keras\n"
        "parallel_keras.quiet_tensorflow()\n"
        "parallel_keras.simulate_devices(2)\n"
        "import tensorflow as tf\n"
        "tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])\n"  # Logs at INFO.
        "print(tf.get_logger().level, 'done')\n"
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout == "30 done\n"
    assert process.stderr == ""


def test_verbose_brings_tensorflow_logging_back():
    process = _python(
        "import os, parallel_keras\n"
        "parallel_keras.quiet_tensorflow(verbose=True)\n"
        "import tensorflow as tf\n"
        "print(os.environ['TF_CPP_MIN_LOG_LEVEL'], tf.get_logger().level)\n"
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout.splitlines()[-1] == "0 20"


def test_an_error_while_importing_tensorflow_is_still_shown():
    process = _python(
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'tensorflow':\n"
        "            raise ModuleNotFoundError('No module named tensorflow (test)')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import parallel_keras\n"
        "parallel_keras.quiet_tensorflow()\n"
    )
    assert process.returncode == 1
    assert "ModuleNotFoundError" in process.stderr and "tensorflow" in process.stderr


def test_called_after_tensorflow_it_says_why_it_cannot_and_the_way_that_works():
    process = _python(
        "import tensorflow as tf\n"
        "import parallel_keras\n"
        "parallel_keras.quiet_tensorflow()\n"
        "parallel_keras.quiet_tensorflow()\n"  # Said once.
        "print(tf.get_logger().level)\n"
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout == "30\n"
    assert process.stderr.count("quiet_tensorflow() was called after TensorFlow was imported") == 1
    assert "the first lines of the script or notebook" in process.stderr


def test_called_first_it_says_nothing():
    process = _python(
        "import parallel_keras\n"
        "parallel_keras.quiet_tensorflow()\n"
        "import keras\n"
        "parallel_keras.quiet_tensorflow()\n"  # Again, once TensorFlow is in: still its own doing.
    )
    assert process.returncode == 0, process.stderr
    assert process.stderr == ""
