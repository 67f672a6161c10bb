# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/session_options.py: what each TF1 session option becomes in TF 2.

The module holds the vocabulary the sessions rule writes with and read-only
checks on syntax; its checks are tested on parsed snippets, and each option's
TF 2 statement through the sessions rule that writes it.
"""

from __future__ import annotations

import libcst as cst
import pytest

from parallel_keras.migrate.rules import session_options, sessions
from tests.migrate.helpers import changes, check_rules, flags

_TF = "import tensorflow as tf\n"
_SESSION = "sess = tf.Session(config=config)\n"
_GROWTH = (
    "for physical_gpu in tf.config.list_physical_devices('GPU'):\n"
    "    tf.config.experimental.set_memory_growth(physical_gpu, True)\n"
)

# option=value in ConfigProto(...) -> the TF 2 statement it becomes.
OPTIONS = {
    "allow_soft_placement": (
        "allow_soft_placement=True",
        "tf.config.set_soft_device_placement(True)\n",
    ),
    "log_device_placement": (
        "log_device_placement=False",
        "tf.debugging.set_log_device_placement(False)\n",
    ),
    "intra_op_threads": (
        "intra_op_parallelism_threads=4",
        "tf.config.threading.set_intra_op_parallelism_threads(4)\n",
    ),
    "inter_op_threads": (
        "inter_op_parallelism_threads=2",
        "tf.config.threading.set_inter_op_parallelism_threads(2)\n",
    ),
    "no_gpu": ("device_count={'GPU': 0}", "tf.config.set_visible_devices([], 'GPU')\n"),
    "allow_growth": ("gpu_options=tf.GPUOptions(allow_growth=True)", _GROWTH),
    "visible_device_list": (
        "gpu_options=tf.GPUOptions(visible_device_list='0,1')",
        # A comprehension no call split shortens: black's layout within 79.
        "tf.config.set_visible_devices(\n"
        "    [\n"
        "        gpu\n"
        "        for gpu in tf.config.list_physical_devices('GPU')\n"
        "        if gpu.name.rsplit(':', 1)[-1]\n"
        "        in str('0,1').replace(' ', '').split(',')\n"
        "    ],\n"
        "    'GPU',\n"
        ")\n",
    ),
}


@pytest.mark.parametrize("option, statement", OPTIONS.values(), ids=OPTIONS.keys())
def test_each_option_becomes_its_tf2_statement(option, statement):
    result = check_rules(
        _TF + f"config = tf.ConfigProto({option})\n" + _SESSION,
        _TF + "\n" + statement,
        sessions.SessionRule,
    )
    assert not result.report.flags
    assert changes(result, sessions.RULE)[0] == (
        2,
        "removed `config = tf.ConfigProto(...)`: TF1 session options became tf.config "
        "calls (TF 2 has no sessions)",
    )


def test_memory_fraction_becomes_growth_and_says_how_to_cap():
    result = check_rules(
        _TF + "config = tf.ConfigProto()\n"
        "config.gpu_options.per_process_gpu_memory_fraction = 0.4\n" + _SESSION,
        _TF + "# parallel-keras migrate: per_process_gpu_memory_fraction=0.4 became\n"
        "#   memory growth; for a hard cap, call\n"
        "#   tf.config.set_logical_device_configuration(gpu,\n"
        "#   [tf.config.LogicalDeviceConfiguration(memory_limit=MB)]) for each\n"
        "#   GPU before using TensorFlow, MB being 0.4 of the GPU's memory.\n" + _GROWTH,
        sessions.SessionRule,
    )
    [(line, _, action)] = flags(result, sessions.RULE)
    assert line == 3
    assert action == session_options.MEMORY_FRACTION_ACTION.format(value="0.4")


def test_an_option_without_a_tf2_call_keeps_the_config_on_the_compat_path():
    before = _TF + "config = tf.ConfigProto(graph_options=opts)\n" + _SESSION
    result = check_rules(
        before,
        _TF
        + "import parallel_keras\n\n"
        + "config = tf.compat.v1.ConfigProto(graph_options=opts)\n"
        + "sess = parallel_keras.compat.Session(config=config)\n",
        sessions.SessionRule,
    )
    assert not flags(result, sessions.RULE)
    compat_changes = [c for c in result.report.changes if c.rule == sessions.RULE]
    assert [c.modern is not None for c in compat_changes] == [True, True]


def _expression(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


@pytest.mark.parametrize(
    "code, count",
    [
        ("{'GPU': 0}", 0),
        ("{'GPU': 2}", 2),
        ("{'CPU': 4}", None),
        ("{'GPU': 0, 'CPU': 1}", None),
        ("{'GPU': n}", None),
        ("counts", None),
    ],
)
def test_device_count_reads_only_a_literal_gpu_count(code, count):
    assert session_options.device_count(_expression(code)) == count


@pytest.mark.parametrize(
    "code, option",
    [
        ("config.allow_soft_placement", ("config", "allow_soft_placement")),
        ("config.gpu_options.allow_growth", ("config", "allow_growth")),
        ("self.config.allow_growth", None),
        ("allow_growth", None),
    ],
)
def test_config_option(code, option):
    assert session_options.config_option(_expression(code)) == option


@pytest.mark.parametrize(
    "code, false", [("False", True), ("0", True), ("True", False), ("1", False), ("x", False)]
)
def test_is_false(code, false):
    assert session_options.is_false(_expression(code)) is false


@pytest.mark.parametrize(
    "statement, visible",
    [
        ("os.environ['CUDA_VISIBLE_DEVICES'] = '0'", True),
        ('os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"', True),
        ("os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'", False),
        ("environ['CUDA_VISIBLE_DEVICES'] = '0'", False),
    ],
)
def test_is_cuda_visible_devices(statement, visible):
    assign = cst.parse_statement(statement + "\n").body[0]
    assert session_options.is_cuda_visible_devices(assign.targets[0].target) is visible


def test_every_flagged_call_says_why_and_how():
    for name, (why, fix) in session_options.FLAGGED.items():
        assert name.startswith(("tensorflow.", "keras.backend."))
        assert why and fix.endswith("."), name
