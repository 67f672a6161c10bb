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


def test_load_of_a_file_the_script_never_saves_is_untouched():
    source = "model = keras.models.load_model('pretrained.h5')\nmodel.load_weights('w.h5')\n"
    assert migrate.migrate_source(source).migrated == source
