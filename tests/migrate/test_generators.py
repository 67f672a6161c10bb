# SPDX-License-Identifier: Apache-2.0
"""Generators and Sequences keep Keras 2's steps and batches."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import parallel_keras
from parallel_keras import migrate

SEQUENCE_SCRIPT = textwrap.dedent("""\
    import keras
    from keras.utils import Sequence

    served = []


    class Batches(Sequence):
        # A dummy length: Keras 2 cycled it for steps_per_epoch batches.
        def __init__(self, x, y):
            self.x, self.y = x, y
            self.passes = 0

        def __len__(self):
            return 1

        def __getitem__(self, index):
            served.append(index)
            return self.x, self.y

        def on_epoch_end(self):
            self.passes += 1


    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(loss='mse', optimizer='sgd')
    train = Batches(x, y)
    history = model.fit_generator(train, steps_per_epoch=5, epochs=2, verbose=0)
    """)


def test_sequence_with_a_dummy_length_still_trains_the_steps_asked_for():
    result = migrate.migrate_source(SEQUENCE_SCRIPT)
    assert (
        "model.fit(\n    parallel_keras.repeat_sequence(train, 5),\n    steps_per_epoch=5,\n"
        in result.migrated
    )
    assert not result.report.flags
    namespace = {"x": np.ones((4, 3), "float32"), "y": np.ones((4, 1), "float32")}
    exec(result.migrated, namespace)
    # 5 steps per epoch; Keras 3 alone trains 1 (the Sequence's length).
    assert int(namespace["model"].optimizer.iterations) == 10
    # Each batch was one full pass; Keras 2 called on_epoch_end after each
    # (the last epoch's are signalled when a next epoch begins).
    assert namespace["train"].passes == 5
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated and not again.report.changes


@pytest.mark.parametrize("steps, flagged", [("len(x) // 32", False), ("compute()", True)])
def test_step_count_written_twice_only_when_it_is_pure(steps, flagged):
    source = (
        "from keras.utils import Sequence\nclass S(Sequence):\n    pass\n"
        f"model.fit_generator(S(), steps_per_epoch={steps})\n"
    )
    result = migrate.migrate_source(source)
    assert bool(result.report.flags) == flagged
    assert ("repeat_sequence" in result.migrated.partition("model.fit")[2]) != flagged


def test_repeat_sequence_cycles_across_epochs_and_checks_its_arguments():
    class Three:
        def __len__(self):
            return 3

        def __getitem__(self, index):
            return index

    repeated = parallel_keras.repeat_sequence(Three(), 2)
    repeated.on_epoch_begin()
    first = [repeated[i] for i in range(len(repeated))]
    repeated.on_epoch_begin()
    second = [repeated[i] for i in range(len(repeated))]
    assert (first, second) == ([0, 1], [2, 0])
    with pytest.raises(ValueError, match="Received: steps=0"):
        parallel_keras.repeat_sequence(Three(), 0)


def test_list_generator_in_another_module_of_the_folder_is_followed(tmp_path):
    (tmp_path / "data.py").write_text(
        textwrap.dedent("""\
        import numpy as np

        def pairs(x, y, batch_size):
            while True:
                yield [x[:batch_size], x[:batch_size]], y[:batch_size]
        """)
    )
    (tmp_path / "train.py").write_text(
        textwrap.dedent("""\
        from data import pairs
        model.fit_generator(pairs(x, y, 8), steps_per_epoch=10)
        """)
    )
    files = migrate.find_python_files([str(tmp_path)])
    project = migrate.scan_project(files)
    results = {relative: migrate.migrate_file(path, relative, project) for path, relative in files}
    assert "yield (x[:batch_size], x[:batch_size]), y[:batch_size]" in (results["data.py"].migrated)
    # Alone, data.py cannot know its generator feeds fit.
    alone = migrate.migrate_file(str(tmp_path / "data.py"))
    assert not alone.changed
