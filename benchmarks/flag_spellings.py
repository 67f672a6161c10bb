# SPDX-License-Identifier: Apache-2.0
"""The underscore spellings of the benchmark flags, kept as hidden aliases.

Flags are kebab-case (`--global-batch-size`), like the `parallel-keras` CLI.
Scripts written against earlier releases keep working: each old spelling is
an absl alias, registered from this module so that `--help` (which lists
the main module's flags) does not show it; `--helpfull` does.
"""

from __future__ import annotations

import re

from absl import flags

_OLD_SPELLING_MODULE = __name__


def keep_old_spellings(*holders: flags.FlagHolder) -> None:
    """Registers `--a_b` as a hidden alias of each kebab-case `--a-b` flag."""
    for holder in holders:
        old = holder.name.replace("-", "_")
        if old != holder.name and old not in flags.FLAGS:
            flags.DEFINE_alias(old, holder.name, module_name=_OLD_SPELLING_MODULE)


def is_kebab_case(name: str) -> bool:
    return re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) is not None
