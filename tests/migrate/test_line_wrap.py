# SPDX-License-Identifier: Apache-2.0
"""Tests of migrate/line_wrap.py: a rewritten line stays within the file's own
longest line (79 at least), split the way a person would write it, in the
file's indent unit, and a second run changes nothing.
"""

from __future__ import annotations

import textwrap

import numpy as np

from parallel_keras import migrate


def _migrated(source: str) -> str:
    result = migrate.migrate_source(source, "train.py")
    again = migrate.migrate_source(result.migrated, "train.py")
    assert again.migrated == result.migrated
    assert not again.report.changes
    return result.migrated


_PADDED = "K.batch_flatten(K.temporal_padding(K.temporal_padding(x, (1, 2)), (3, 0)))"


def _padded_in_a_function(indent: str) -> str:
    return (
        "from keras import backend as K\n"
        "\n"
        "\n"
        "def flat(x):\n"
        f"{indent}if x is not None:\n"
        f"{indent * 2}return {_PADDED}\n"
        f"{indent}return x\n"
    )


def _check_flat(migrated: str) -> None:
    namespace: dict = {}
    exec(migrated, namespace)
    out = namespace["flat"](np.ones((2, 3, 4), "float32"))
    assert out.shape == (2, 36)
    assert float(np.asarray(out).sum()) == 2 * 3 * 4


def test_split_uses_the_files_two_space_indent_and_hanging_arguments():
    migrated = _migrated(_padded_in_a_function("  "))

    assert migrated.splitlines()[3:11] == [
        "def flat(x):",
        "  if x is not None:",
        "    return parallel_keras.compat.batch_flatten(",
        "      parallel_keras.compat.temporal_padding(",
        "        parallel_keras.compat.temporal_padding(x, (1, 2)), (3, 0)",
        "      )",
        "    )",
        "  return x",
    ]
    _check_flat(migrated)


def test_split_uses_the_files_tab_indent():
    migrated = _migrated(_padded_in_a_function("\t"))

    assert migrated.splitlines()[3:11] == [
        "def flat(x):",
        "\tif x is not None:",
        "\t\treturn parallel_keras.compat.batch_flatten(",
        "\t\t\tparallel_keras.compat.temporal_padding(",
        "\t\t\t\tparallel_keras.compat.temporal_padding(x, (1, 2)), (3, 0)",
        "\t\t\t)",
        "\t\t)",
        "\treturn x",
    ]
    _check_flat(migrated)


def test_arguments_go_one_per_line_only_when_they_do_not_fit_one_line():
    source = textwrap.dedent("""\
        from keras.optimizers import SGD
        sgd = SGD(lr=0.01, decay=1e-6, momentum=0.9, nesterov=True)
        """)

    assert _migrated(source) == textwrap.dedent("""\
        from keras.optimizers import SGD
        import keras

        sgd = SGD(
            learning_rate=keras.optimizers.schedules.InverseTimeDecay(
                0.01, decay_steps=1, decay_rate=1e-6
            ),
            momentum=0.9,
            nesterov=True
        )
        """)


def test_a_call_inside_an_expression_or_an_f_string_is_never_split_alone():
    source = textwrap.dedent("""\
        from keras import backend as K


        def describe(x):
            return f'{K.batch_flatten(K.temporal_padding(x, (1, 2))).shape}'


        def dice(y_true_f, y_pred_f, smooth=1.0):
            intersection = K.sum(y_true_f * y_pred_f)
            total = 2. * K.sum(intersection) + K.sum(y_true_f) + K.sum(y_pred_f)
            return (2. * K.sum(intersection) + smooth) / (K.sum(y_true_f) + K.sum(y_pred_f) + smooth)
        """)
    limit = max(len(line) for line in source.splitlines())

    migrated = _migrated(source)

    lines = migrated.splitlines()
    # Too long for one continuation line: the statement as black lays it out.
    start = lines.index("    return (2.0 * keras.ops.sum(intersection) + smooth) / (")
    assert lines[start : start + 3] == [
        "    return (2.0 * keras.ops.sum(intersection) + smooth) / (",
        "        keras.ops.sum(y_true_f) + keras.ops.sum(y_pred_f) + smooth",
        "    )",
    ]
    # Fits one continuation line: the whole value, in parentheses.
    assert lines[lines.index("    total = (") : lines.index("    total = (") + 3] == [
        "    total = (",
        "        2. * keras.ops.sum(intersection) + keras.ops.sum(y_true_f) + keras.ops.sum(y_pred_f)",
        "    )",
    ]
    # A line break in an f-string's braces is a syntax error before Python 3.12.
    assert lines[lines.index("def describe(x):") + 1] == (
        "    return f'{parallel_keras.compat.batch_flatten("
        "parallel_keras.compat.temporal_padding(x, (1, 2))).shape}'"
    )
    assert all(len(line) <= limit for line in lines if not line.startswith("    return f'"))
    assert not any(line.strip().startswith("y_true_f") for line in lines)
    namespace: dict = {}
    exec(migrated, namespace)
    y_true = np.array([1.0, 0.0, 1.0], "float32")
    assert float(namespace["dice"](y_true, y_true)) == (2 * 2 + 1) / (2 + 2 + 1)
    assert namespace["describe"](np.ones((2, 3, 4), "float32")) == "(2, 24)"


def test_comment_at_the_call_stays_on_its_closing_line():
    source = textwrap.dedent(f"""\
        import numpy as np
        from keras import backend as K
        x = np.ones((2, 3, 4), 'float32')
        z = K.concatenate([
            {_PADDED},  # padded
            K.batch_flatten(x),
        ])
        y = {_PADDED}  # both ends
        """)

    migrated = _migrated(source)

    assert migrated.splitlines()[5:] == [
        "z = keras.ops.concatenate([",
        "    parallel_keras.compat.batch_flatten(",
        "        parallel_keras.compat.temporal_padding(",
        "            parallel_keras.compat.temporal_padding(x, (1, 2)), (3, 0)",
        "        )",
        "    ),  # padded",
        "    parallel_keras.compat.batch_flatten(x),",
        "], axis=-1)",
        "y = parallel_keras.compat.batch_flatten(",
        "    parallel_keras.compat.temporal_padding(",
        "        parallel_keras.compat.temporal_padding(x, (1, 2)), (3, 0)",
        "    )",
        ")  # both ends",
    ]
    namespace: dict = {}
    exec(migrated, namespace)
    assert namespace["z"].shape == (2, 36 + 12)
    assert namespace["y"].shape == (2, 36)


def test_lines_the_user_wrote_stay_and_a_continued_rewritten_statement_is_laid_out():
    user_line = "kept = dict(first_argument_of_a_long_line=1, second_argument_of_a_long_line=2)  # the longest line"
    source = textwrap.dedent(f"""\
        from keras import backend as K
        {user_line}
        eij = K.reshape(K.dot(K.reshape(x, (-1, features_dim)),
                              K.reshape(weights_of_this_layer, (features_dim, 1))), (-1, step_dim))
        y = K.batch_flatten(K.temporal_padding(x, (1, 2)))
        """)
    assert len(user_line) == 98

    migrated = _migrated(source)

    lines = migrated.splitlines()
    assert user_line in lines
    # Splitting only before `, (-1, step_dim))` would read worse than the long
    # line: the statement the user had continued is laid out by black.
    assert lines[-8:-1] == [
        "eij = keras.ops.reshape(",
        "    keras.ops.dot(",
        "        keras.ops.reshape(x, (-1, features_dim)),",
        "        keras.ops.reshape(weights_of_this_layer, (features_dim, 1)),",
        "    ),",
        "    (-1, step_dim),",
        ")",
    ]
    # Within the file's longest line (98, longer than 79): one line.
    assert lines[-1] == (
        "y = parallel_keras.compat.batch_flatten(parallel_keras.compat.temporal_padding(x, (1, 2)))"
    )


def test_a_raised_exceptions_call_is_the_lines_outermost_call():
    source = f"from keras import backend as K\n\n\ndef check(x):\n    raise ValueError({_PADDED})\n"

    assert _migrated(source).splitlines()[3:] == [
        "def check(x):",
        "    raise ValueError(",
        "        parallel_keras.compat.batch_flatten(",
        "            parallel_keras.compat.temporal_padding(",
        "                parallel_keras.compat.temporal_padding(x, (1, 2)), (3, 0)",
        "            )",
        "        )",
        "    )",
    ]


def test_a_rewritten_comprehension_is_laid_out_within_the_files_longest_line():
    # The GPU count's rewrite is a comprehension, which no call split shortens.
    source = textwrap.dedent("""\
        from tensorflow.python.client import device_lib


        def get_available_gpus():
            local_device_protos = device_lib.list_local_devices()
            return [x.name for x in local_device_protos if x.device_type == 'GPU']
        """)
    limit = max(79, *(len(line) for line in source.splitlines()))

    migrated = _migrated(source)

    assert max(len(line) for line in migrated.splitlines()) <= limit
    assert "        for device in tf.config.list_logical_devices('GPU')" in migrated.replace(
        "tensorflow.config", "tf.config"
    )
    namespace: dict = {}
    exec(migrated, namespace)
    assert isinstance(namespace["get_available_gpus"](), list)


_MEMORY_FRACTION = """\
config = tf.ConfigProto()
config.gpu_options.per_process_gpu_memory_fraction = 0.4
sess = tf.Session(config=config)
"""


def _nested(depth: int, body: str) -> str:
    """`body` inside `depth` nested blocks of a function, 4 spaces a level."""
    lines = ["def train(runs):"]
    for level in range(1, depth):
        lines.append("    " * level + f"for run_{level} in runs:")
    lines += ["    " * depth + line for line in body.splitlines()]
    return "\n".join(lines) + "\n"


def _note(migrated: str) -> list[str]:
    lines = migrated.splitlines()
    first = next(i for i, line in enumerate(lines) if "# parallel-keras migrate:" in line)
    end = first + 1
    while lines[end].lstrip().startswith("#   "):
        end += 1
    return lines[first:end]


def test_an_indented_note_fits_the_files_limit():
    source = "import tensorflow as tf\n\n\n" + _nested(3, _MEMORY_FRACTION)
    assert max(len(line) for line in source.splitlines()) <= 79

    migrated = _migrated(source)

    note = _note(migrated)
    assert len(note) > 1 and all(line.startswith(" " * 12 + "#") for line in note)
    assert max(len(line) for line in note) <= 79
    # Every word of the note is kept, in order.
    words = " ".join(line.strip().lstrip("#") for line in note).split()
    assert words[:5] == [
        "parallel-keras",
        "migrate:",
        "per_process_gpu_memory_fraction=0.4",
        "became",
        "memory",
    ]
    assert words[-3:] == ["the", "GPU's", "memory."]


def test_a_second_run_keeps_a_note_wrapped_at_another_limit():
    # The first run wraps the deep note within 79 but cannot shorten the
    # f-string's line: the second run's limit is that line, wider than the
    # first's, and the flagged line is still there to flag again.
    source = (
        "import tensorflow as tf\nfrom keras import backend as K\n\n\n"
        "def shape(x):\n"
        "    return f'{K.batch_flatten(K.temporal_padding(x, (1, 2))).shape}'\n\n\n"
        + _nested(4, "y = tf.contrib.slim.fancy_layer(runs)\n")
    )
    assert max(len(line) for line in source.splitlines()) <= 79
    first = migrate.migrate_source(source, "train.py")
    assert max(len(line) for line in first.migrated.splitlines()) > 79  # the f-string's
    assert max(len(line) for line in _note(first.migrated)) <= 79

    second = migrate.migrate_source(first.migrated, "train.py")

    assert second.migrated == first.migrated
    assert not second.report.changes
    assert len(second.report.flags) == len(first.report.flags) == 1


def test_a_rewritten_block_header_is_laid_out_and_its_block_kept():
    source = textwrap.dedent("""\
        from keras import backend as K


        def phase(flags):
            for flag in flags:  # each flag
                if flags and not isinstance(K.learning_phase(), int) and flag:
                    value = 1
                elif flag:
                    value = 2
                else:
                    value = 3
            return value
        """)
    assert max(len(line) for line in source.splitlines()) <= 79

    migrated = _migrated(source)

    assert max(len(line) for line in migrated.splitlines()) <= 79
    lines = migrated.splitlines()
    start = lines.index("        if (")
    assert lines[start : start + 10] == [
        "        if (",
        "            flags",
        "            and not isinstance(parallel_keras.compat.learning_phase(), int)",
        "            and flag",
        "        ):",
        "            value = 1",
        "        elif flag:",
        "            value = 2",
        "        else:",
        "            value = 3",
    ]
    assert "    for flag in flags:  # each flag" in lines
    namespace: dict = {}
    exec(migrated, namespace)
    assert namespace["phase"]([None, 0]) == 3


def test_a_decorated_headers_own_line_stays_when_only_its_block_is_laid_out():
    source = textwrap.dedent("""\
        from keras import backend as K


        @staticmethod
        def count(limit = 2):
            return len([x for x in K.get_session().list_devices() if x.device_type == 'GPU'])
        """)

    migrated = _migrated(source)

    lines = migrated.splitlines()
    assert lines[lines.index("@staticmethod") + 1] == "def count(limit = 2):"
    assert lines[lines.index("def count(limit = 2):") + 1] == "    return len("
    assert max(len(line) for line in lines) <= 79
