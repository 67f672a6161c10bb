# SPDX-License-Identifier: Apache-2.0
"""TF1 session set-up, GPU visibility and GPU counts."""

from __future__ import annotations

import textwrap

import pytest

from parallel_keras import migrate

CASES = {
    # TF 2 still reads the variable when it starts: before the import, it stays.
    "cuda_visible_devices_before_import_stays": (
        """\
        import os
        os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'
        import tensorflow as tf
        from keras.utils import multi_gpu_model
        """,
        """\
        import os
        os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'
        import tensorflow as tf
        from parallel_keras import multi_gpu_model
        """,
    ),
    "cuda_visible_devices_after_import_becomes_tf_config": (
        """\
        import os
        import tensorflow as tf
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        """,
        """\
        import os
        import tensorflow as tf

        tf.config.set_visible_devices(
            [
                gpu
                for gpu in tf.config.list_physical_devices('GPU')
                if gpu.name.rsplit(':', 1)[-1] in str("1").replace(' ', '').split(',')
            ],
            'GPU',
        )
        """,
    ),
    "cuda_visible_devices_before_a_block_local_import_stays": (
        """\
        import os
        import sys

        def main(gpus):
            os.environ["CUDA_VISIBLE_DEVICES"] = gpus
            import tensorflow as tf
            return tf.__version__

        if __name__ == '__main__':
            os.environ["CUDA_VISIBLE_DEVICES"] = sys.argv[1]
            try:
                os.environ["CUDA_VISIBLE_DEVICES"] = "0"
                import tensorflow as tf
            except ImportError:
                os.environ["CUDA_VISIBLE_DEVICES"] = "1"
                import tensorflow as tf
        """,
        """\
        import os
        import sys

        def main(gpus):
            os.environ["CUDA_VISIBLE_DEVICES"] = gpus
            import tensorflow as tf
            return tf.__version__

        if __name__ == '__main__':
            os.environ["CUDA_VISIBLE_DEVICES"] = sys.argv[1]
            try:
                os.environ["CUDA_VISIBLE_DEVICES"] = "0"
                import tensorflow as tf
            except ImportError:
                os.environ["CUDA_VISIBLE_DEVICES"] = "1"
                import tensorflow as tf
        """,
    ),
    "session_returned_by_a_function_keeps_its_config": (
        """\
        import tensorflow as tf

        def get_session():
            config = tf.ConfigProto()
            config.gpu_options.allow_growth = True
            sess = tf.Session(config=config)
            sess.run(tf.global_variables_initializer())
            return sess
        """,
        None,  # Compatibility paths: the config stays with the session that names it.
    ),
    "gpu_count_from_session_device_list": (
        """\
        from keras import backend as K
        import tensorflow as tf
        n = len(K.get_session().list_devices())
        """,
        """\
        import tensorflow as tf
        n = len(tf.config.list_logical_devices())
        """,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_before_after(name):
    before, after = (textwrap.dedent(text) if text else text for text in CASES[name])
    result = migrate.migrate_source(before)
    if after is None:
        assert "config = tf.compat.v1.ConfigProto()" in result.migrated
        assert "parallel_keras.compat.Session(config=config)" in result.migrated
        assert not result.report.flags
        assert all(c.modern for c in result.report.changes if c.rule == "TF1 sessions")
    else:
        assert result.migrated == after
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated


def test_added_imports_go_below_a_gpu_variable_set_after_other_statements():
    # dsb2018_selim's train.py: `cv2.setNumThreads(0)` ends the opening
    # imports, and the variable is set further down, before Keras's import.
    # The imports migrate adds went above it, so a second run read the
    # variable as set after TensorFlow started and rewrote it.
    source = textwrap.dedent("""\
        import cv2
        cv2.setNumThreads(0)
        import os
        from params import args

        os.environ['CUDA_VISIBLE_DEVICES'] = args.gpu

        from keras.utils.training_utils import multi_gpu_model
        import keras.backend as K

        def gpus():
            return [x.name for x in K.device_lib.list_local_devices() if x.name[:4] == '/gpu']
        """)
    result = migrate.migrate_source(source)
    lines = result.migrated.splitlines()
    variable = lines.index("os.environ['CUDA_VISIBLE_DEVICES'] = args.gpu")
    assert lines.index("import tensorflow") > variable
    assert lines.index("import parallel_keras.devices") > variable
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated and not again.report.changes


def test_added_imports_stay_above_a_module_level_use_before_the_variable():
    # An added name read before the variable is set: the import stays on top.
    source = textwrap.dedent("""\
        import os
        import scipy.misc
        image = scipy.misc.imread('a.png')
        os.environ['CUDA_VISIBLE_DEVICES'] = '0'
        import keras
        """)
    result = migrate.migrate_source(source)
    lines = result.migrated.splitlines()
    used = next(i for i, line in enumerate(lines) if line.startswith("image = parallel_keras."))
    added = next(i for i, line in enumerate(lines) if line.startswith("import parallel_keras"))
    assert added < used
    assert migrate.migrate_source(result.migrated).migrated == result.migrated


def test_a_variable_set_in_main_stays_when_migrate_adds_import_keras_above_it():
    # crnn_ocr's train.py: nothing imports Keras at module level; its
    # `__main__` block sets the variable, then imports TensorFlow. The first
    # run adds `import keras` on top for rewritten code in a function, and a
    # second run read the variable as set after that import and rewrote it.
    source = textwrap.dedent("""\
        import os
        import sys

        def build(n):
            return keras.layers.Dense(n)

        def ctc(args):
            y_pred, labels = args
            return K.ctc_batch_cost(labels, y_pred, 1, 1)

        if __name__ == '__main__':
            os.environ["CUDA_VISIBLE_DEVICES"] = sys.argv[1]
            import tensorflow as tf
            from keras import backend as K
        """)
    result = migrate.migrate_source(source)
    assert 'os.environ["CUDA_VISIBLE_DEVICES"] = sys.argv[1]' in result.migrated
    assert "\nimport keras\n" in result.migrated  # what made a second run differ
    again = migrate.migrate_source(result.migrated)
    assert again.migrated == result.migrated and not again.report.changes


@pytest.mark.parametrize(
    "imports, kept",
    [
        (
            "import keras\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nkeras.backend.clear_session()",
            True,
        ),
        (
            "import keras\nkeras.backend.clear_session()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'",
            False,
        ),
        ("import tensorflow as tf\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'", False),
        ("from keras import layers\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'", False),
    ],
    ids=["bare-import-unread", "bare-import-read-first", "aliased", "from-import"],
)
def test_a_bare_import_keras_counts_from_its_first_read(imports, kept):
    result = migrate.migrate_source("import os\n" + imports + "\n")
    assert ("os.environ['CUDA_VISIBLE_DEVICES'] = '1'" in result.migrated) is kept
    assert ("set_visible_devices" in result.migrated) is not kept
    assert migrate.migrate_source(result.migrated).migrated == result.migrated
