# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/training_api.py: the `*_generator` methods Keras 3 removed."""

from __future__ import annotations

import pytest

from parallel_keras.migrate.rules import training_api
from tests.migrate.helpers import changes, check_rules, flags, run_rules


def _moved(method: str, rest: str = "") -> str:
    new = method[: -len("_generator")]
    return f"`{method}` -> `{new}` (Keras 3 removed {method}){rest}"


REWRITES = {
    "positional_arguments_by_keyword": (
        "model.fit_generator(gen, 100, 5, 1)\n",
        "model.fit(gen, steps_per_epoch=100, epochs=5, verbose=1)\n",
        _moved("fit_generator", "; passed steps_per_epoch, epochs, verbose by keyword"),
    ),
    "generator_keyword_becomes_x": (
        "model.fit_generator(generator=gen, steps_per_epoch=10)\n",
        "model.fit(x=gen, steps_per_epoch=10)\n",
        _moved("fit_generator"),
    ),
    "single_worker_options_dropped_silently": (
        "model.fit_generator(gen, steps_per_epoch=10, max_queue_size=10, workers=1, "
        "use_multiprocessing=False)\n",
        "model.fit(gen, steps_per_epoch=10)\n",
        _moved(
            "fit_generator",
            "; removed max_queue_size, workers, use_multiprocessing (now arguments of "
            "keras.utils.PyDataset)",
        ),
    ),
    "evaluate_generator": (
        "score = model.evaluate_generator(test_gen, 20)\n",
        "score = model.evaluate(test_gen, steps=20)\n",
        _moved("evaluate_generator", "; passed steps by keyword"),
    ),
    "predict_generator": (
        "preds = model.predict_generator(test_gen, steps=20, verbose=1)\n",
        "preds = model.predict(test_gen, steps=20, verbose=1)\n",
        _moved("predict_generator"),
    ),
    "continuation_lines_follow_the_shorter_name": (
        "model.fit_generator(train_gen,\n"
        "                    steps_per_epoch=10,\n"
        "                    epochs=2)\n",
        "model.fit(train_gen,\n          steps_per_epoch=10,\n          epochs=2)\n",
        _moved("fit_generator"),
    ),
}


@pytest.mark.parametrize("before, after, message", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after, message):
    result = check_rules(before, after, training_api.GeneratorMethodsRule)
    assert changes(result, training_api.RULE) == [(1, message)]
    assert not result.report.flags


@pytest.mark.parametrize(
    "call, data, options",
    [
        (
            "model.fit_generator(gen, 100, workers=4, use_multiprocessing=True)",
            "gen",
            "workers=4, use_multiprocessing=True",
        ),
        ("model.fit_generator(generator=batches(), workers=8)", "batches()", "workers=8"),
    ],
)
def test_parallel_loading_is_flagged_naming_the_data(call, data, options):
    result = run_rules(call + "\n", training_api.GeneratorMethodsRule)
    [(line, message, action)] = flags(result, training_api.RULE)
    assert line == 1
    assert message == f"`{data}` was read with several workers or processes"
    assert action == (
        f"to keep parallel loading, make the class of `{data}` a keras.utils.PyDataset (or "
        f"Sequence) subclass and call super().__init__({options}) first in its __init__."
    )
    assert "workers" not in result.migrated.splitlines()[-1]
    again = run_rules(result.migrated, training_api.GeneratorMethodsRule)
    assert again.migrated == result.migrated and len(again.report.flags) == 1


@pytest.mark.parametrize(
    "method, fix",
    [
        (
            "predict_classes",
            "use np.argmax(model.predict(x), axis=-1) for softmax outputs, or "
            "(model.predict(x) > 0.5).astype('int32') for a sigmoid output.",
        ),
        ("predict_proba", "use model.predict(x)."),
    ],
)
def test_removed_predictors_are_flagged(method, fix):
    source = f"out = model.{method}(x)\n"
    result = run_rules(source, training_api.GeneratorMethodsRule)
    assert flags(result, training_api.RULE) == [(1, f"`{method}` was removed in TF 2.6", fix)]
    assert result.migrated.endswith(source)
    assert not result.report.changes


@pytest.mark.parametrize(
    "source",
    [
        "model.fit(x, y, epochs=2)\n",
        "model.predict(x)\n",
    ],
)
def test_left_alone(source):
    result = check_rules(source, source, training_api.GeneratorMethodsRule)
    assert not result.report.changes and not result.report.flags


_AUTO_CLASS_WEIGHT = """\
import numpy as np
import keras

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softmax")])
model.compile("sgd", "categorical_crossentropy")
x = np.arange(12, dtype="float32").reshape(4, 3) / 10
y = np.eye(2, dtype="float32")[[0, 1, 1, 1]]
initial = model.get_weights()
model.fit(x, y, epochs=1, verbose=0, class_weight="auto")
model.fit_generator((b for b in [(x, y)] * 2), steps_per_epoch=2, epochs=1, verbose=0,
                    class_weight='auto')
"""


def test_a_str_class_weight_is_removed_and_trains_as_keras2_did_unweighted():
    import keras
    import numpy as np

    namespace: dict = {}
    with pytest.raises(AttributeError):  # Keras 3: 'str' object has no attribute 'get'
        exec(_AUTO_CLASS_WEIGHT, namespace)  # noqa: S102
    result = run_rules(_AUTO_CLASS_WEIGHT, training_api.GeneratorMethodsRule)
    assert "class_weight" not in result.migrated
    removed = [line for line, text in changes(result, training_api.RULE) if "class_weight" in text]
    assert removed == [10, 11]
    exec(result.migrated, namespace)  # noqa: S102
    # The same two steps and one epoch without any class_weight give the same weights.
    reference = keras.models.clone_model(namespace["model"])
    reference.set_weights(namespace["initial"])
    reference.compile("sgd", "categorical_crossentropy")
    x, y = namespace["x"], namespace["y"]
    reference.fit(x, y, epochs=1, verbose=0)
    reference.fit((b for b in [(x, y)] * 2), steps_per_epoch=2, epochs=1, verbose=0)
    for got, want in zip(namespace["model"].get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # A dict is Keras 2's and Keras 3's meaning alike: kept.
    kept = "model.fit(x, y, class_weight={0: 1.0, 1: 3.0})\n"
    check_rules(kept, kept, training_api.GeneratorMethodsRule)


FLOAT_STEPS = """\
import numpy as np
from keras.layers import Dense, Input
from keras.models import Model

drawn = []


def batches():
    while True:
        drawn.append(1)
        yield np.ones((2, 3), 'float32'), np.ones((2, 1), 'float32')


inputs = Input(shape=(3,))
model = Model(inputs, Dense(1)(inputs))
model.compile(optimizer='sgd', loss='mse')
num_samples, batch_size = 9, 2
history = model.fit_generator(batches(), steps_per_epoch=num_samples / batch_size, epochs=1,
                              verbose=0)
"""


def test_a_float_number_of_steps_runs_rounded_up_as_in_keras2():
    from parallel_keras import migrate

    result = migrate.migrate_source(FLOAT_STEPS)
    assert "steps_per_epoch=math.ceil(num_samples / batch_size)" in result.migrated
    assert "import math" in result.migrated
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    # Keras 2: `while steps_done < 4.5` ran 5 steps (Keras 3 may draw ahead).
    assert namespace["model"].optimizer.iterations.numpy() == 5


WRAPPER = """\
import numpy as np
from keras.layers import Dense, Input
from keras.models import Model


class Trainer(object):
    def __init__(self):
        inputs = Input(shape=(3,))
        self.model = Model(inputs, Dense(1)(inputs))
        self.model.compile(optimizer='sgd', loss='mse')

    def fit_generator(self, generator, steps_per_epoch, epochs=1):
        self.model.fit_generator(generator, steps_per_epoch, epochs, verbose=0)


def batches():
    while True:
        yield np.ones((2, 3), 'float32'), np.ones((2, 1), 'float32')


trainer = Trainer()
trainer.fit_generator(batches(), steps_per_epoch=3, epochs=1)
"""


def test_a_project_wrappers_own_fit_generator_keeps_its_name():
    from parallel_keras import migrate
    from parallel_keras.migrate import project as project_lib

    # As the folder's scan sees it (the class may live in another module).
    project = project_lib.Project()
    project_lib.scan_source(WRAPPER, "script", project)
    result = migrate.migrate_source(WRAPPER, project=project)
    assert "trainer.fit_generator(batches()" in result.migrated
    assert (
        "self.model.fit(\n            generator,\n            steps_per_epoch=steps_per_epoch,\n"
        "            epochs=epochs,\n" in result.migrated
    )
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    assert namespace["trainer"].model.optimizer.iterations.numpy() == 3


STAR_WRAPPER = """\
import numpy as np
from keras.layers import Dense, Input, concatenate
from keras.models import Model


class Trainer(object):
    def __init__(self):
        image, mask = Input(shape=(3,)), Input(shape=(2,))
        self.model = Model([image, mask], Dense(1)(concatenate([image, mask])))
        self.model.compile(optimizer='sgd', loss='mse')

    def fit_generator(self, generator, *args, **kwargs):
        return self.model.fit_generator(generator, *args, **kwargs)

    def evaluate_generator(self, generator, *args, **kwargs):
        return self.model.evaluate_generator(generator, *args, **kwargs)

    def predict_generator(self, generator, *args, **kwargs):
        return self.model.predict_generator(generator, *args, **kwargs)


def batches():
    while True:
        # Keras 2 read a list as the model's inputs (Keras 3 refuses it).
        yield [np.ones((2, 3), 'float32'), np.ones((2, 2), 'float32')], np.ones((2, 1), 'float32')


def inputs():
    while True:
        yield [np.ones((2, 3), 'float32'), np.ones((2, 2), 'float32')]


trainer = Trainer()
# Keras 2's order: steps_per_epoch, epochs, verbose, callbacks, validation_data, validation_steps.
history = trainer.fit_generator(batches(), 3, 2, 0, None, batches(), 2.5, workers=4)
loss = trainer.evaluate_generator(batches(), 2)
predictions = trainer.predict_generator(inputs(), 3)
"""


def test_fit_generator_with_star_arguments_runs_with_keras2_positional_order():
    from parallel_keras import migrate
    from parallel_keras.migrate import project as project_lib

    project = project_lib.Project()
    project_lib.scan_source(STAR_WRAPPER, "script", project)
    result = migrate.migrate_source(STAR_WRAPPER, project=project)

    assert (
        "return parallel_keras.compat.fit_generator(self.model, generator, *args, **kwargs)"
        in result.migrated
    )
    assert not result.report.flags
    assert [c.modern for c in result.report.changes if c.modern and "star" in c.message]
    # A second run leaves parallel_keras.compat's own call alone (it used to
    # pass the module itself as the model, once more each run).
    again_project = project_lib.Project()
    project_lib.scan_source(result.migrated, "script", again_project)
    again = migrate.migrate_source(result.migrated, project=again_project)
    assert again.migrated == result.migrated and not again.report.changes
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    history = namespace["history"]
    # 2 epochs of 3 steps; validation on 3 steps (2.5 rounded up, as Keras 2 ran it).
    assert history.params["epochs"] == 2 and history.params["steps"] == 3
    assert len(history.history["val_loss"]) == 2
    assert namespace["trainer"].model.optimizer.iterations.numpy() == 6
    assert isinstance(namespace["loss"], float)
    assert namespace["predictions"].shape == (6, 1)


def test_compat_fit_generator_refuses_an_argument_keras2_did_not_have():
    from parallel_keras import compat

    with pytest.raises(TypeError, match="steps_per_epoch.*both"):
        compat.fit_generator(object(), iter(()), 3, steps_per_epoch=3)
    with pytest.raises(TypeError, match="no argument 'batch_size'"):
        compat.fit_generator(object(), iter(()), batch_size=3)


def test_compat_generator_methods_take_keras2_list_batches():
    import keras
    import numpy as np

    from parallel_keras import compat

    image, mask = keras.Input((3,)), keras.Input((2,))
    model = keras.Model(
        [image, mask], keras.layers.Dense(1)(keras.layers.concatenate([image, mask]))
    )
    model.compile(optimizer="sgd", loss="mse")

    def batches(with_targets=True):
        # A generator migrate cannot see (a method of a data class): Keras 2
        # read the list as the model's inputs; Keras 3's fit refuses a list.
        while True:
            inputs = [np.ones((2, 3), "float32"), np.ones((2, 2), "float32")]
            yield (inputs, np.ones((2, 1), "float32")) if with_targets else inputs

    compat.fit_generator(model, batches(), 3, 1, 0, None, batches(), 2)
    assert model.optimizer.iterations.numpy() == 3
    assert isinstance(compat.evaluate_generator(model, batches(), 2), float)
    assert compat.predict_generator(model, batches(False), 2).shape == (4, 1)
