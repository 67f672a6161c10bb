# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/list_batches.py: batches holding a list a helper returns."""

from __future__ import annotations

import textwrap

import pytest

from parallel_keras.migrate.rules import list_batches
from tests.migrate.helpers import check_rewrite, check_rules

_HELPERS = """\
def make_inputs(rows):
    return [LEFT[rows], RIGHT[rows]]


def make_targets(rows):
    targets = []
    targets.append(FIRST[rows])
    return targets


def make_images(rows):
    return np.stack([LEFT[rows], RIGHT[rows]])


"""

# name -> (the generator or Sequence and its use, the use migrated).
REWRITES = {
    "generator_yielding_a_helpers_list": (
        "def batches():\n    while True:\n        y = make_targets(ROWS)\n"
        "        yield make_images(ROWS), y\n\n\nmodel.fit(batches(), steps_per_epoch=2)\n",
        "model.fit(parallel_keras.compat.list_batches(batches()), steps_per_epoch=2)\n",
    ),
    "sequence_returning_a_helpers_batch_held_in_a_name": (
        "class Batches(Sequence):\n    def __getitem__(self, i):\n"
        "        return make_inputs(ROWS), make_targets(ROWS)\n\n\n"
        "train = Batches()\nmodel.fit(train, validation_data=Batches())\n",
        "train = Batches()\nmodel.fit(\n    parallel_keras.compat.list_batches(train),\n"
        "    validation_data=parallel_keras.compat.list_batches(Batches())\n)\n",
    ),
    "predicts_bare_list_inputs": (
        "def inputs():\n    for i in range(2):\n        yield make_inputs(ROWS)\n\n\n"
        "predicted = model.predict(inputs(), steps=2)\n",
        "predicted = model.predict(\n"
        "    parallel_keras.compat.list_batches(inputs(), inputs_only=True), steps=2\n)\n",
    ),
}


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_data_built_from_a_helpers_list_is_read_as_tuples(name):
    source, migrated_use = REWRITES[name]
    before = _HELPERS + source
    kept = source.rpartition("\n\n\n")[0]
    after = f"import parallel_keras.compat\n\n{_HELPERS}{kept}\n\n\n{migrated_use}"
    result = check_rules(before, after, list_batches.ListBatchesRule)
    assert [change.modern for change in result.report.changes if change.rule == "generators"] == [
        "yield tuples: (x1, x2), y and x, (y1, y2)"
    ]


LEFT_ALONE = [
    # The helper returns an array, not a list.
    "def batches():\n    while True:\n        yield make_images(ROWS), TARGETS\n\n\n"
    "model.fit(batches(), steps_per_epoch=2)\n",
    # A list the generator writes itself: the generator rule makes it a tuple.
    "def batches():\n    while True:\n        yield [LEFT, RIGHT], TARGETS\n\n\n"
    "model.fit(batches(), steps_per_epoch=2)\n",
    # Already read through the compatibility path.
    "def batches():\n    while True:\n        yield make_inputs(ROWS), TARGETS\n\n\n"
    "model.fit(parallel_keras.compat.list_batches(batches()), steps_per_epoch=2)\n",
    # Not data a model reads.
    "def batches():\n    while True:\n        yield make_inputs(ROWS), TARGETS\n\n\n"
    "show(batches())\n",
]


@pytest.mark.parametrize("source", LEFT_ALONE)
def test_data_without_a_helpers_list_is_left_alone(source):
    check_rules(_HELPERS + source, _HELPERS + source, list_batches.ListBatchesRule)


def test_a_cycled_sequence_is_read_as_tuples_once_and_a_second_run_changes_nothing():
    before = textwrap.dedent(
        """\
        from keras.utils import Sequence


        def make_targets(rows):
            return [rows, rows]


        class Batches(Sequence):
            def __init__(self):
                self.n = 2

            def __len__(self):
                return self.n

            def __getitem__(self, i):
                return i, make_targets(i)


        model.fit_generator(Batches(), steps_per_epoch=4)
        """
    )
    result = check_rewrite(
        before,
        before.replace(
            "from keras.utils import Sequence\n",
            "from keras.utils import Sequence\nimport parallel_keras\nimport parallel_keras.compat\n",
        )
        .replace("        self.n = 2", "        super().__init__()\n        self.n = 2")
        .replace(
            "model.fit_generator(Batches(), steps_per_epoch=4)",
            "model.fit(\n    parallel_keras.compat.list_batches(\n"
            "        parallel_keras.repeat_sequence(Batches(), 4)\n    ),\n"
            "    steps_per_epoch=4\n)",
        ),
    )
    assert not result.report.flags
