"""`parallel-keras migrate`: rewrite legacy Keras 2 multi-GPU scripts.

Built on LibCST, so comments and formatting survive. Never imports or runs
the scripts it reads, and never imports TensorFlow or Keras.

Example:

>>> from parallel_keras import migrate
>>> result = migrate.migrate_source(
...     "import keras\\nopt = keras.optimizers.Adam(lr=0.01)\\n")
>>> print(result.migrated, end="")
import keras
opt = keras.optimizers.Adam(learning_rate=0.01)
"""

from __future__ import annotations

from parallel_keras.migrate.driver import FileResult
from parallel_keras.migrate.driver import find_data_files
from parallel_keras.migrate.driver import find_python_files
from parallel_keras.migrate.driver import migrate_file
from parallel_keras.migrate.driver import scan_project
from parallel_keras.migrate.driver import unified_diff
from parallel_keras.migrate.driver import write_in_place
from parallel_keras.migrate.driver import write_output
from parallel_keras.migrate.engine import MigrationError
from parallel_keras.migrate.engine import MigrationResult
from parallel_keras.migrate.engine import migrate_source
from parallel_keras.migrate.report import Change
from parallel_keras.migrate.report import FileReport
from parallel_keras.migrate.report import Flag
from parallel_keras.migrate.report import format_report
