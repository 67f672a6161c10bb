# SPDX-License-Identifier: Apache-2.0
"""What each worker process started by `parallel-keras launch` runs.

`python -m parallel_keras.multi_worker.bootstrap script.py [args...]`
runs the script as `__main__` with its own arguments, exactly as
`python script.py args` would, and creates the multi-worker strategy at the
last moment it can (see `cluster.strategy.initialize`): when the script calls
`simulate_devices(n)` (each worker then gets n devices), or else right before
TensorFlow starts. It never starts TensorFlow itself, so the script's first
lines still configure it, as they do when it runs alone.

A worker whose peers died fails inside a collective once the collective
timeout expires; that error is turned into a one-line explanation and exit
code `LOST_PEER_EXIT_CODE`, instead of a long TensorFlow traceback or a hang.
"""

from __future__ import annotations

import os
import runpy
import sys

LOST_PEER_EXIT_CODE = 75  # EX_TEMPFAIL: another attempt may succeed.


def _lost_peer_errors():
    # A script that failed before TensorFlow started lost no peer; importing
    # TensorFlow here would only delay its own error by seconds.
    if "tensorflow" not in sys.modules:
        return ()
    import tensorflow as tf

    return (
        tf.errors.DeadlineExceededError,
        tf.errors.UnavailableError,
        tf.errors.AbortedError,
        tf.errors.CancelledError,
    )


def quiet_tensorflow_unless_verbose(environ) -> None:
    """Keeps TensorFlow's start-up lines out of a worker's output.

    The launcher (`parallel-keras launch`, `notebook_launcher`) passes its
    verbosity as `TF_CPP_MIN_LOG_LEVEL`: "0" only with `-v`. The workers are
    entry points of their own, so they import TensorFlow the way the
    commands do (`quiet_tensorflow`); the script's own `quiet_tensorflow()`
    call would come too late, since the strategy hook below imports
    TensorFlow before the script runs.
    """
    if environ.get("TF_CPP_MIN_LOG_LEVEL", "0") in ("", "0"):
        return
    from parallel_keras import quiet

    quiet.quiet_tensorflow()


def create_strategy_when_tf_starts(info) -> None:
    """Creates the strategy (or the simulated devices) as TensorFlow starts.

    Uses the devices per worker of `cluster.settings.current()`, which the
    entry point configured.
    """
    from parallel_keras import _internals
    from parallel_keras.cluster import settings, strategy

    devices_per_worker = settings.current().devices_per_worker

    def create():
        if info.num_workers > 1:
            strategy.initialize()
            return
        if devices_per_worker and devices_per_worker > 1:
            import tensorflow as tf

            physical = tf.config.list_physical_devices("CPU")[0]
            if tf.config.get_logical_device_configuration(physical) is None:
                tf.config.set_logical_device_configuration(
                    physical,
                    [tf.config.LogicalDeviceConfiguration()] * devices_per_worker,
                )

    _internals.run_before_tf_starts(create)


def configure_worker(environ) -> None:
    """Reads what the launcher put in `environ` into `cluster.settings`.

    With `--slurm` it also sets `TF_CONFIG` from Slurm's environment.

    Raises:
        ValueError: If a setting or the Slurm environment is invalid.
    """
    from parallel_keras.cluster import settings
    from parallel_keras.multi_worker import slurm, worker_env

    settings.configure(worker_env.settings_from_environ(environ))
    port_base = worker_env.slurm_port_base(environ)
    if port_base is not None:
        slurm.check_slurm_environment(environ)
        environ["TF_CONFIG"] = slurm.tf_config_from_slurm(port_base, environ)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write(
            "usage: python -m parallel_keras.multi_worker.bootstrap script.py [args...]\n"
        )
        return 2
    script, script_args = argv[1], argv[2:]
    from parallel_keras.cluster import membership, settings, writes

    try:
        configure_worker(os.environ)
    except ValueError as error:
        sys.stderr.write(f"parallel_keras: {error}\n")
        return 2
    info = membership.worker_info()
    quiet_tensorflow_unless_verbose(os.environ)
    create_strategy_when_tf_starts(info)
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except _lost_peer_errors() as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        timeout = settings.current().collective_timeout
        sys.stderr.write(
            f"parallel_keras: worker {info.worker_index} lost contact with the "
            "other workers (one of them died or stopped responding within "
            f"the collective timeout of {timeout:.0f} s). "
            f"{type(error).__name__}: {first_line[:300]}\n"
        )
        return LOST_PEER_EXIT_CODE
    finally:
        writes.cleanup()
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
