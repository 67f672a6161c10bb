# SPDX-License-Identifier: Apache-2.0
"""Keras 2's `ModelMGPU` wrapper classes recognized as they are defined
(`keras.Model.__init_subclass__`), never through the caller's frame; every
other class left as defined."""

import functools

import keras
import numpy as np
import pytest

import parallel_keras
from parallel_keras._internals import interceptions
from parallel_keras.data_parallel import parallel_model, wrapper_classes

# An alias bound at import, as `from parallel_keras import multi_gpu_model as replicate`.
replicate = parallel_keras.multi_gpu_model
replicate_on_two = functools.partial(parallel_keras.multi_gpu_model, gpus=2)


def template(seed=3):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)], name="serial")


def data():
    rng = np.random.RandomState(2)
    return rng.rand(8, 4).astype("float32"), rng.rand(8, 3).astype("float32")


class AliasedMGPU(keras.Model):
    """The idiom with `multi_gpu_model` under another name."""

    def __init__(self, ser_model, gpus):
        pmodel = replicate(ser_model, gpus)
        self.__dict__.update(pmodel.__dict__)
        self._smodel = ser_model

    def __getattribute__(self, attrname):
        if "load" in attrname or "save" in attrname:
            return getattr(self._smodel, attrname)
        return super().__getattribute__(attrname)


class PartialMGPU(keras.Model):
    def __init__(self, ser_model):
        self.__dict__.update(replicate_on_two(ser_model).__dict__)


class Holder(keras.Model):
    """Not the idiom: holds the parallel model, initialized by Keras after."""

    def __init__(self, serial):
        parallel = parallel_keras.multi_gpu_model(serial, 2)
        super().__init__(name="holder")
        self.parallel = parallel


def _plain_init(self, units=2):
    super(PlainSubclass, self).__init__()
    self.dense = keras.layers.Dense(units)


class PlainSubclass(keras.Model):
    __init__ = _plain_init

    def call(self, inputs):
        return self.dense(inputs)


def test_a_model_subclass_not_naming_multi_gpu_model_keeps_its_own_init():
    assert vars(PlainSubclass)["__init__"] is _plain_init
    assert PlainSubclass not in wrapper_classes._wrapped
    model = PlainSubclass(3)
    assert model(np.ones((1, 4), "float32")).shape == (1, 3)
    # Nor is any of Keras's own subclasses (Sequential, Functional, ...).
    keras_subclasses = [
        cls
        for cls in wrapper_classes._subclasses(keras.Model)
        if cls.__module__.startswith("keras")
    ]
    assert keras.Sequential in keras_subclasses
    assert not any(cls in wrapper_classes._wrapped for cls in keras_subclasses)


@pytest.mark.parametrize("wrapper_class", [AliasedMGPU, Holder, PartialMGPU])
def test_a_wrapper_init_is_wrapped_and_marks_the_instance_only_while_it_runs(wrapper_class):
    init = vars(wrapper_class)["__init__"]
    assert init.__wrapped__.__qualname__ == f"{wrapper_class.__name__}.__init__"
    assert wrapper_classes.constructing_wrapper() is None


def _by_name(self, model):
    parallel_keras.multi_gpu_model(model, 2)


def _imported_inside(self, model):
    from parallel_keras import multi_gpu_model

    multi_gpu_model(model, 2)


def _in_a_comprehension(self, models):
    return [multi_gpu_model(model, 2) for model in models]  # noqa: F821


def _in_a_closure():
    to_gpus = parallel_keras.multi_gpu_model

    def init(self, model):
        to_gpus(model, 2)

    return init


def _logged(function):
    @functools.wraps(function)
    def logged(*args, **kwargs):
        return function(*args, **kwargs)

    return logged


def _unrelated(self, model):
    self.model = keras.Model(model.inputs, model.outputs)


@pytest.mark.parametrize(
    ("init", "names"),
    [
        (_by_name, True),
        (_imported_inside, True),
        (_in_a_comprehension, True),
        (_in_a_closure(), True),
        (_logged(_by_name), True),
        (_logged(_unrelated), False),
        (AliasedMGPU.__init__.__wrapped__, True),
        (PartialMGPU.__init__.__wrapped__, True),
        (_unrelated, False),
        (_plain_init, False),
    ],
)
def test_names_multi_gpu_model_by_name_alias_partial_closure_or_nested_code(init, names):
    assert wrapper_classes.names_multi_gpu_model(init) is names


@pytest.mark.parametrize("wrapper_class", [AliasedMGPU, PartialMGPU])
def test_an_aliased_wrapper_is_adopted_and_trains_as_one_device(wrapper_class):
    x, y = data()
    single = template()
    single.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    expected = single.train_on_batch(x, y)

    serial = template()
    args = (serial, 2) if wrapper_class is AliasedMGPU else (serial,)
    wrapper = wrapper_class(*args)
    assert isinstance(wrapper, wrapper_class)
    assert isinstance(wrapper, parallel_model.ParallelModel)
    wrapper.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    np.testing.assert_allclose(wrapper.train_on_batch(x, y), expected, rtol=1e-5)
    for trained, reference in zip(serial.get_weights(), single.get_weights()):
        np.testing.assert_allclose(trained, reference, atol=1e-6)


def test_undo_gives_the_wrapper_its_own_class_back():
    serial = template()
    wrapper = AliasedMGPU(serial, 2)
    adoption = wrapper._wrapper_adoption
    assert (adoption.wrapper, adoption.user_class) == (wrapper, AliasedMGPU)
    adoption.undo()
    assert type(wrapper) is AliasedMGPU
    assert not isinstance(wrapper, parallel_model.ParallelModel)
    assert "_wrapper_adoption" not in vars(wrapper)
    # A parallel model made outside any wrapper records no wrapper adoption.
    assert "_wrapper_adoption" not in vars(parallel_keras.multi_gpu_model(template(), 2))


def test_a_holder_initialized_by_keras_is_left_alone_and_its_parallel_model_trains():
    x, y = data()
    single = template()
    single.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    expected = single.train_on_batch(x, y)
    holder = Holder(template())
    assert type(holder) is Holder
    assert "_wrapper_adoption" not in vars(holder)
    holder.parallel.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    np.testing.assert_allclose(holder.parallel.train_on_batch(x, y), expected, rtol=1e-5)


def test_a_failing_wrapper_init_leaves_no_instance_marked():
    class Failing(keras.Model):
        def __init__(self, serial):
            parallel_keras.multi_gpu_model(serial, 2)
            raise RuntimeError("the user's own error")

    with pytest.raises(RuntimeError, match="the user's own error"):
        Failing(template())
    assert wrapper_classes.constructing_wrapper() is None


def test_removing_the_hook_leaves_classes_defined_after_as_defined():
    entry = next(
        entry
        for entry in parallel_keras.testing.installed_interceptions()
        if entry.target == wrapper_classes.INIT_SUBCLASS
    )
    assert entry.target == "keras.src.models.model.Model.__init_subclass__"
    entry.remove()
    try:
        assert "__init_subclass__" not in vars(keras.Model)

        def init(self, serial):
            self.__dict__.update(parallel_keras.multi_gpu_model(serial, 2).__dict__)

        unhooked = type("Unhooked", (keras.Model,), {"__init__": init})
        assert vars(unhooked)["__init__"] is init
    finally:
        wrapper_classes.install()
    # Installing again reads the classes defined meanwhile.
    assert vars(unhooked)["__init__"].__wrapped__ is init
    assert interceptions.is_installed(wrapper_classes.INIT_SUBCLASS)


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_wrapper_defined_before_parallel_keras_is_imported_is_adopted():
    code = """
        import keras
        import numpy as np

        class ModelMGPU(keras.Model):
            def __init__(self, ser_model, gpus):
                from parallel_keras import multi_gpu_model

                pmodel = multi_gpu_model(ser_model, gpus)
                self.__dict__.update(pmodel.__dict__)
                self._smodel = ser_model

            def __getattribute__(self, attrname):
                if "load" in attrname or "save" in attrname:
                    return getattr(self._smodel, attrname)
                return super().__getattribute__(attrname)

        import parallel_keras

        parallel_keras.simulate_devices(2)

        def template():
            keras.utils.set_random_seed(3)
            return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])

        x, y = np.ones((8, 4), "float32"), np.zeros((8, 3), "float32")
        single = template()
        single.compile(optimizer="sgd", loss="mse")
        single.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
        serial = template()
        wrapper = ModelMGPU(serial, 2)
        wrapper.compile(optimizer="sgd", loss="mse")
        wrapper.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
        difference = max(
            float(np.abs(a - b).max()) for a, b in zip(serial.get_weights(), single.get_weights())
        )
        print("RESULT", isinstance(wrapper, parallel_keras.ParallelModel), difference < 1e-5)
    """
    process = parallel_keras.testing.run_python(code)
    assert process.stdout.split()[-3:] == ["RESULT", "True", "True"]


def test_class_keywords_reach_the_next_init_subclass_in_the_mro():
    class Tagged:
        tags: list = []

        def __init_subclass__(cls, tag=None, **kwargs):
            super().__init_subclass__(**kwargs)
            Tagged.tags.append((cls.__name__, tag))

    class AfterKeras(keras.Model, Tagged, tag="after"):
        def __init__(self, serial):
            self.__dict__.update(parallel_keras.multi_gpu_model(serial, 2).__dict__)

    class BeforeKeras(Tagged, keras.Model, tag="before"):
        def __init__(self, serial):
            self.__dict__.update(parallel_keras.multi_gpu_model(serial, 2).__dict__)

    assert Tagged.tags == [("AfterKeras", "after"), ("BeforeKeras", "before")]
    for cls in (AfterKeras, BeforeKeras):
        assert vars(cls)["__init__"].__wrapped__.__qualname__.endswith(f"{cls.__name__}.__init__")


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize(
    "first_import",
    [
        "import parallel_keras.data_parallel.wrapper_classes",
        "from parallel_keras.data_parallel.multi_gpu_model import multi_gpu_model",
    ],
)
def test_the_import_time_hooks_are_all_in_place_whichever_module_imports_keras(first_import):
    code = f"""
        import warnings
        warnings.simplefilter("error", RuntimeWarning)
        {first_import}
        import parallel_keras
        print("RESULT", sorted(e.target for e in parallel_keras.testing.installed_interceptions()))
    """
    process = parallel_keras.testing.run_python(code)
    listed = process.stdout.split("RESULT", 1)[1].strip()
    # Importing `parallel_model` also gives ParallelModel (not Keras) its
    # symbolic build; the three of Keras must all be there.
    for target in (
        "keras.src.models.model.Model.__init_subclass__",
        "keras.src.ops.node.Node.__init__",
        "keras.src.models.functional.functional_from_config",
    ):
        assert f"'{target}'" in listed
