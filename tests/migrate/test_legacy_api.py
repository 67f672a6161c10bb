# SPDX-License-Identifier: Apache-2.0
"""Tests of rules/legacy_api.py: Keras 1/2 spellings Keras 3 rejects."""

from __future__ import annotations

import pytest

from parallel_keras import migrate
from parallel_keras.migrate.rules import legacy_api
from tests.migrate.helpers import changes, check_rules, flags

_K = "from keras import backend as K\n"
_ORDERING_SET = (
    "`set_image_dim_ordering` -> `set_image_data_format` "
    "('th' = 'channels_first', 'tf' = 'channels_last')"
)

REWRITES = {
    "model_input_output": (
        "from keras.models import Model\nmodel = Model(input=x, output=y)\n",
        "from keras.models import Model\nmodel = Model(inputs=x, outputs=y)\n",
        [(2, "Model(input= -> inputs=, output= -> outputs=) (Keras 1 names, rejected by Keras 3)")],
    ),
    "model_input_only": (
        "import keras\nmodel = keras.Model(input=x, outputs=y)\n",
        "import keras\nmodel = keras.Model(inputs=x, outputs=y)\n",
        [(2, "Model(input= -> inputs=) (Keras 1 names, rejected by Keras 3)")],
    ),
    "nb_epoch_in_fit": (
        "model.fit(x, y, nb_epoch=10)\n",
        "model.fit(x, y, epochs=10)\n",
        [(1, "`nb_epoch=` -> `epochs=` (Keras 1 name)")],
    ),
    "samples_per_epoch_on_an_iterator": (
        "train = datagen.flow(x, y, batch_size=32)\n"
        "model.fit_generator(train, samples_per_epoch=1000, nb_epoch=5)\n",
        "train = datagen.flow(x, y, batch_size=32)\nmodel.fit_generator(train, epochs=5)\n",
        [
            (2, "`nb_epoch=` -> `epochs=` (Keras 1 name)"),
            (
                2,
                "removed `samples_per_epoch=` (Keras 1, in samples): the iterator knows its "
                "number of batches",
            ),
        ],
    ),
    "nb_val_samples_on_a_sequence": (
        "from keras.utils import Sequence\nclass Batches(Sequence):\n    pass\n"
        "model.fit_generator(gen, validation_data=Batches(), nb_val_samples=100)\n",
        "from keras.utils import Sequence\nclass Batches(Sequence):\n    pass\n"
        "model.fit_generator(gen, validation_data=Batches())\n",
        [
            (
                4,
                "removed `nb_val_samples=` (Keras 1, in samples): the iterator knows its "
                "number of batches",
            )
        ],
    ),
    "image_dim_ordering": (
        _K + "if K.image_dim_ordering() == 'th':\n    pass\n",
        _K
        + "if ('th' if K.image_data_format() == 'channels_first' else 'tf') == 'th':\n    pass\n",
        [
            (
                2,
                "`image_dim_ordering()` -> `image_data_format()` mapped back to 'th'/'tf' "
                "(Keras 3 removed dim ordering)",
            )
        ],
    ),
    "set_image_dim_ordering_literal": (
        _K + "K.set_image_dim_ordering('tf')\n",
        _K + "K.set_image_data_format('channels_last')\n",
        [(2, _ORDERING_SET)],
    ),
    "set_image_dim_ordering_variable": (
        _K + "K.set_image_dim_ordering(order)\n",
        _K + "K.set_image_data_format({'th': 'channels_first', 'tf': 'channels_last'}[order])\n",
        [(2, _ORDERING_SET)],
    ),
    "set_image_dim_ordering_imported_function": (
        "from keras.backend import set_image_dim_ordering\nset_image_dim_ordering('th')\n",
        # The import goes: Keras 3's backend has no set_image_dim_ordering.
        "import keras\n\nkeras.backend.set_image_data_format('channels_first')\n",
        [(2, _ORDERING_SET)],
    ),
    "embedding_input_length": (
        "from keras.layers import Embedding\ne = Embedding(1000, 64, input_length=10)\n",
        "from keras.layers import Embedding\ne = Embedding(1000, 64, input_shape=(10,))\n",
        [
            (
                2,
                "Embedding `input_length=10` -> `input_shape=(10,)`: Keras 3 ignores "
                "input_length, so the model would not be built",
            )
        ],
    ),
    # Imported from Keras 2's module file (keras/layers/embeddings.py): the
    # same layer, matched on the first run.
    "embedding_from_keras2_module_file": (
        "from keras.layers.embeddings import Embedding\ne = Embedding(1000, 64, input_length=10)\n",
        "from keras.layers.embeddings import Embedding\ne = Embedding(1000, 64, input_shape=(10,))\n",
        [
            (
                2,
                "Embedding `input_length=10` -> `input_shape=(10,)`: Keras 3 ignores "
                "input_length, so the model would not be built",
            )
        ],
    ),
}


@pytest.mark.parametrize("before, after, recorded", REWRITES.values(), ids=REWRITES.keys())
def test_rewrites(before, after, recorded):
    result = check_rules(before, after, legacy_api.LegacyApiRule)
    assert changes(result, legacy_api.RULE) == recorded
    assert not result.report.flags


def test_samples_of_a_plain_generator_are_flagged_not_guessed():
    before = "model.fit_generator(batches(), samples_per_epoch=1000)\n"
    result = check_rules(
        before,
        "# parallel-keras migrate: replace samples_per_epoch=N by\n"
        "#   steps_per_epoch=N // batch_size (the batch size of the generator).\n" + before,
        legacy_api.LegacyApiRule,
    )
    assert flags(result, legacy_api.RULE) == [
        (
            1,
            "`samples_per_epoch=` counts samples (Keras 1); Keras 3 counts batches in "
            "`steps_per_epoch=`",
            "replace samples_per_epoch=N by steps_per_epoch=N // batch_size (the batch size "
            "of the generator).",
        )
    ]
    assert not result.report.changes


@pytest.mark.parametrize(
    "source",
    [
        "from keras.models import Model\nmodel = Model(inputs=x, outputs=y)\n",
        "model = Model(input=x, output=y)\n",  # Not Keras's Model.
        "model.fit(x, y, epochs=10)\n",
        "from keras.layers import Embedding\ne = Embedding(10, 4, input_length=3, input_shape=(3,))\n",
        _K + "K.set_image_data_format('channels_first')\n",
    ],
)
def test_left_alone(source):
    result = check_rules(source, source, legacy_api.LegacyApiRule)
    assert not result.report.changes and not result.report.flags


def test_a_layer_imported_from_a_keras2_module_file_is_rewritten_on_the_first_run():
    # The imports rule moves `keras.layers.embeddings` to `keras.layers` in
    # the same run; this rule used to match only the new spelling, so the
    # first run left `input_length` and a second run rewrote it.
    source = (
        "from keras.layers.embeddings import Embedding\n"
        "from keras.engine.training import Model\n"
        "net = Embedding(input_dim=50, output_dim=8, input_length=6)(inputs)\n"
        "model = Model(input=inputs, output=net)\n"
    )
    once = migrate.migrate_source(source, "train.py").migrated
    assert "input_shape=(6,)" in once and "input_length" not in once
    assert "Model(inputs=inputs, outputs=net)" in once
    assert migrate.migrate_source(once, "train.py").migrated == once
