# SPDX-License-Identifier: Apache-2.0
"""Save-format renames reach only Keras files this script saves."""

from __future__ import annotations

import textwrap

from parallel_keras import migrate


def _migrate(source: str) -> migrate.MigrationResult:
    result = migrate.migrate_source(textwrap.dedent(source))
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated and not again.report.changes
    return result


def test_own_class_with_a_save_method_is_not_a_keras_object():
    result = _migrate("""\
        import json

        class Vocabulary(object):
            def save(self, path):
                with open(path, 'w') as f:
                    json.dump({}, f)

        vocab_model = Vocabulary()
        vocab_model.save('vocab_model')
        other_model.save('config.json')
        """)
    assert "vocab_model.save('vocab_model')" in result.migrated
    assert "other_model.save('config.json')" in result.migrated
    assert not result.report.changes and not result.report.flags


def test_load_before_the_save_keeps_the_keras2_file_and_a_later_load_follows_the_save():
    result = _migrate("""\
        model.load_weights('x_weights.h5')
        model.fit(x, y)
        model.save_weights('x_weights.h5')
        model.load_weights('x_weights.h5')
        """)
    lines = [line for line in result.migrated.splitlines() if not line.startswith("#")]
    assert lines == [
        "model.load_weights('x_weights.h5')",
        "model.fit(x, y)",
        "model.save_weights('x_weights.weights.h5')",
        "model.load_weights('x_weights.weights.h5')",
    ]
    [flag] = result.report.flags
    assert flag.line == 1 and "'x_weights.weights.h5'" in flag.action


def test_load_of_a_file_the_script_never_saves_keeps_its_path():
    # Its path is not renamed; the load goes through Keras 2's load_model.
    source = "model = keras.models.load_model('pretrained.h5')\nmodel.load_weights('w.h5')\n"
    assert migrate.migrate_source(source).migrated == (
        "import parallel_keras\n\n"
        "model = parallel_keras.compat.load_model('pretrained.h5')\nmodel.load_weights('w.h5')\n"
    )


def test_a_by_name_load_of_a_computed_path_reads_keras2_cudnn_weights(tmp_path):
    import keras
    import numpy as np

    from parallel_keras import migrate
    from tests import test_legacy_cudnn as cudnn

    rnn_weights = [cudnn._cudnn_weights("lstm", 5)]
    dense_weights = [np.full((cudnn.UNITS, 2), 0.1, "float32"), np.zeros(2, "float32")]
    path = str(tmp_path / "textgen_weights.hdf5")
    cudnn._write_keras2_file(path, "lstm", False, "single", rnn_weights, dense_weights)
    source = (
        "import keras\n"
        "def build(weights_path, timesteps, features, units):\n"
        "    inputs = keras.Input((timesteps, features))\n"
        "    rnn = keras.layers.LSTM(units, return_sequences=True, name='cu_dnnlstm_1')(inputs)\n"
        "    model = keras.Model(inputs, keras.layers.Dense(2, name='dense_1')(rnn))\n"
        "    model.load_weights(weights_path, by_name=True)\n"
        "    return model\n"
    )
    result = migrate.migrate_source(source)
    assert "parallel_keras.compat.load_weights(model, weights_path, by_name=True)" in (
        result.migrated
    )
    namespace: dict = {}
    exec(result.migrated, namespace)  # noqa: S102
    model = namespace["build"](path, cudnn.TIMESTEPS, cudnn.FEATURES, cudnn.UNITS)
    rnn = keras.Model(model.input, model.get_layer("cu_dnnlstm_1").output)
    np.testing.assert_allclose(
        np.asarray(rnn(cudnn.X)),
        cudnn._cudnn_reference("lstm", rnn_weights[0], cudnn.X),
        atol=1e-5,
    )


def test_a_model_saved_and_loaded_at_a_computed_suffix_less_path_round_trips(tmp_path):
    """neurowriter: model.save(folder + '/' + loss2modelname(loss)), then load_model of it."""
    import numpy as np

    source = (
        "import keras\n"
        "from keras.models import load_model\n"
        "def loss2modelname(loss):\n"
        "    return 'model_loss%f' % loss\n"
        "model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])\n"
        "model.save(folder + '/' + loss2modelname(0.5))\n"
        "best = load_model(folder + '/' + loss2modelname(0.5))\n"
    )
    result = migrate.migrate_source(source, "optimizer.py")
    assert "parallel_keras.compat.save_model(model, folder" in result.migrated
    assert "parallel_keras.compat.load_model(folder" in result.migrated
    assert not result.report.flags
    assert migrate.migrate_source(result.migrated, "optimizer.py").migrated == result.migrated
    namespace = {"folder": str(tmp_path)}
    exec(result.migrated, namespace)  # noqa: S102
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model_loss0.500000"]
    x = np.ones((1, 3), dtype="float32")
    np.testing.assert_allclose(
        namespace["best"].predict(x, verbose=0), namespace["model"].predict(x, verbose=0)
    )


def test_a_migrated_script_resumes_training_with_its_keras2_optimizer(tmp_path):
    """Keras 2: train, `model.save(folder + '/m.h5')`; later `load_model(path)`, train on.

    migrate builds Keras 2's RMSprop with `compat.keras2_optimizer` (Keras 2's
    formula) and sends the load to `compat.load_model`, which gives that
    optimizer back: the resumed run ends where an uninterrupted one does.
    """
    import numpy as np

    train = (
        "import numpy as np\n"
        "from keras.models import Sequential, load_model\n"
        "from keras.layers import Dense\n"
        "from keras.optimizers import RMSprop\n"
        "x = np.linspace(0, 0.01, 48, dtype='float32').reshape(16, 3)\n"
        "y = np.linspace(0, 0.02, 32, dtype='float32').reshape(16, 2)\n"
        "model = Sequential([Dense(2, input_dim=3, kernel_initializer='ones')])\n"
        "model.compile(RMSprop(lr=0.01, decay=0.1), 'mse')\n"
        "model.fit(x, y, batch_size=16, epochs=EPOCHS, shuffle=False, verbose=0)\n"
        "model.save(folder + '/m.h5')\n"
    )
    resume = (
        "import numpy as np\n"
        "from keras.models import load_model\n"
        "x = np.linspace(0, 0.01, 48, dtype='float32').reshape(16, 3)\n"
        "y = np.linspace(0, 0.02, 32, dtype='float32').reshape(16, 2)\n"
        "model = load_model(path)\n"
        "model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)\n"
    )
    migrated_train = _migrate(train).migrated
    migrated_resume = _migrate(resume).migrated
    assert "parallel_keras.compat.load_model(path)" in migrated_resume

    whole = {"folder": str(tmp_path), "EPOCHS": 6}
    exec(migrated_train, whole)  # noqa: S102
    (tmp_path / "m.h5").unlink()
    first = {"folder": str(tmp_path), "EPOCHS": 3}
    exec(migrated_train, first)  # noqa: S102
    resumed = {"path": str(tmp_path / "m.h5")}
    exec(migrated_resume, resumed)  # noqa: S102
    for got, want in zip(resumed["model"].get_weights(), whole["model"].get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_a_keras_archive_literal_load_is_keras3s_own():
    # A '.keras' path is Keras 3 code already: keras.models.load_model reads it.
    source = "import keras\nmodel = keras.models.load_model('pretrained.keras')\n"
    assert migrate.migrate_source(source).migrated == source
