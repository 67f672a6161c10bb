# SPDX-License-Identifier: Apache-2.0
# parallel_keras.compat: Keras 2 / TF1 code paths that run on Keras 3, listed
# once; `__init__.py` loads them lazily. docs/compat.md says what each does
# and how to modernise it.

from ..callbacks import ModelCheckpoint as ModelCheckpoint
from . import conv_utils as conv_utils
from . import generic_utils as generic_utils
from . import scipy_misc as scipy_misc
from .backend import function as function
from .backend import learning_phase as learning_phase
from .backend import set_learning_phase as set_learning_phase
from .layers import Container as Container
from .layers import Merge as Merge
from .layers import Network as Network
from .layers import obtain_input_shape as obtain_input_shape
from .losses import add_loss as add_loss
from .preprocessing import DirectoryIterator as DirectoryIterator
from .preprocessing import ImageDataGenerator as ImageDataGenerator
from .preprocessing import Iterator as Iterator
from .preprocessing import NumpyArrayIterator as NumpyArrayIterator
from .preprocessing import TimeseriesGenerator as TimeseriesGenerator
from .preprocessing import Tokenizer as Tokenizer
from .preprocessing import adapt_sequence as adapt_sequence
from .preprocessing import apply_affine_transform as apply_affine_transform
from .preprocessing import apply_brightness_shift as apply_brightness_shift
from .preprocessing import apply_channel_shift as apply_channel_shift
from .preprocessing import hashing_trick as hashing_trick
from .preprocessing import make_sampling_table as make_sampling_table
from .preprocessing import one_hot as one_hot
from .preprocessing import random_brightness as random_brightness
from .preprocessing import random_channel_shift as random_channel_shift
from .preprocessing import random_rotation as random_rotation
from .preprocessing import random_shear as random_shear
from .preprocessing import random_shift as random_shift
from .preprocessing import random_zoom as random_zoom
from .preprocessing import skipgrams as skipgrams
from .preprocessing import text_to_word_sequence as text_to_word_sequence
from .preprocessing import tokenizer_from_json as tokenizer_from_json
from .sessions import EagerSession as EagerSession
from .sessions import Session as Session
from .sessions import apply_session_config as apply_session_config
from .sessions import get_session as get_session
from .sessions import set_session as set_session
from .sessions import tf1_graph as tf1_graph
from .summaries import FileWriter as FileWriter
from .weights import load_weights as load_weights
from .weights import save_weights as save_weights
