# SPDX-License-Identifier: Apache-2.0
"""Settings of a cluster worker, given by its entry point as plain values.

`parallel-keras launch` passes its flags to each worker it starts; the
worker's entry point (`multi_worker.bootstrap`, `multi_worker.run_function`)
reads them and calls `configure` before the script runs. Library code asks
`current()` and never reads the environment. A process started some other
way keeps the defaults, or passes its values to `multi_worker.initialize`.
"""

from __future__ import annotations

import dataclasses

DEFAULT_COLLECTIVE_TIMEOUT = 60.0
DEFAULT_STARTUP_TIMEOUT = 120.0


@dataclasses.dataclass(frozen=True)
class ClusterSettings:
    """What the launcher fixed for this worker.

    Attributes:
        devices_per_worker: The launcher's `--devices-per-worker` (simulated
            CPU devices per worker), or None when it gave none.
        collective_timeout: Seconds a collective waits for its peers.
        startup_timeout: Seconds a worker waits for all others to start.
        worker_temp_root: Folder, removed by the launcher, holding the
            temporary folders of non-chief workers; None for the system's.
    """

    devices_per_worker: int | None = None
    collective_timeout: float = DEFAULT_COLLECTIVE_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    worker_temp_root: str | None = None


_CURRENT = ClusterSettings()


def configure(settings: ClusterSettings) -> None:
    """Makes `settings` this process's settings (entry points only)."""
    global _CURRENT
    _CURRENT = settings


def current() -> ClusterSettings:
    """This process's settings; the defaults unless an entry point set them."""
    return _CURRENT
