# SPDX-License-Identifier: Apache-2.0
# The public API of parallel_keras: every name it exports, written once.
#
# Type checkers and IDEs read this stub; at run time `__init__.py` hands it
# to `_exports.attach_stub`, which makes each name load on first use
# (Scientific Python SPEC 1). Add an export here and nowhere else.

from . import callbacks as callbacks
from . import compat as compat
from .callbacks import ParallelModelCheckpoint as ParallelModelCheckpoint
from .cluster.writes import write_path as write_path
from .data_parallel.accumulation import keep_global_batch as keep_global_batch
from .data_parallel.multi_gpu_model import multi_gpu_model as multi_gpu_model
from .data_parallel.parallel_model import ParallelModel as ParallelModel
from .data_parallel.sequences import repeat_sequence as repeat_sequence
from .device_placement.branches import place_branches as place_branches
from .device_placement.report import LayerCallPlacement as LayerCallPlacement
from .device_placement.report import placement as placement
from .device_placement.runtime import clear_placement as clear_placement
from .device_placement.scope import device as device
from .devices import simulate_devices as simulate_devices
from .multi_worker.backup import BackupAndRestore as BackupAndRestore
from .multi_worker.notebook import notebook_launcher as notebook_launcher
from .quiet import quiet_tensorflow as quiet_tensorflow
from .saving.legacy import load_legacy_weights as load_legacy_weights
from .saving.weights import load_weights as load_weights

__version__: str
