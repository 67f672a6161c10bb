# SPDX-License-Identifier: Apache-2.0
# The public API of parallel_keras.migrate, listed once; `__init__.py` loads it lazily.

from .driver import FileResult as FileResult
from .driver import find_data_files as find_data_files
from .driver import find_python_files as find_python_files
from .driver import migrate_file as migrate_file
from .driver import scan_project as scan_project
from .driver import unified_diff as unified_diff
from .driver import write_in_place as write_in_place
from .driver import write_output as write_output
from .engine import MigrationError as MigrationError
from .engine import MigrationResult as MigrationResult
from .engine import migrate_source as migrate_source
from .report import Change as Change
from .report import FileReport as FileReport
from .report import Flag as Flag
from .report import format_report as format_report
