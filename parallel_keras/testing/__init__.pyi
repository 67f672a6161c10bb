# SPDX-License-Identifier: Apache-2.0
# The public testing helpers, listed once; `__init__.py` loads them lazily.

from . import legacy_files as legacy_files
from .interceptions import describe_interceptions as describe_interceptions
from .interceptions import installed_interceptions as installed_interceptions
from .op_devices import OpDeviceRecorder as OpDeviceRecorder
from .op_devices import record_op_devices as record_op_devices
from .processes import run_python as run_python
