# SPDX-License-Identifier: Apache-2.0
"""What each worker of `notebook_launcher` runs.

`python -m parallel_keras.multi_worker.run_function PAYLOAD FOLDER` loads
the function and arguments the notebook sent, prepares the worker as the
script bootstrap does (the strategy is created when TensorFlow starts), runs
the function and writes `FOLDER/result-I.pkl`: `("ok", value)` or
`("error", traceback)`.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback


def main(argv: list[str]) -> int:
    payload_path, folder = argv[1], argv[2]
    from parallel_keras.cluster import membership, writes
    from parallel_keras.multi_worker import bootstrap, functions

    bootstrap.configure_worker(os.environ)
    info = membership.worker_info()
    bootstrap.quiet_tensorflow_unless_verbose(os.environ)
    bootstrap.create_strategy_when_tf_starts(info)
    result_path = os.path.join(folder, f"result-{info.worker_index}.pkl")
    try:
        with open(payload_path, "rb") as file:
            function_data, args_data = pickle.load(file)
        function = functions.load_function(function_data)
        args = [functions.load_value(arg) for arg in args_data]
        value = function(*args)
        try:
            outcome = pickle.dumps(("ok", value))
        # The value's own __reduce__ may raise anything: all mean unpicklable.
        except Exception as error:  # noqa: BLE001
            raise TypeError(
                "notebook_launcher returns each worker's return value to the "
                "notebook, so it must be picklable. Received: "
                f"{type(value).__name__} ({error}). Return plain values "
                "(numbers, lists, numpy arrays such as model.get_weights())."
            ) from None
        code = 0
    # Whatever ends the function (SystemExit too) goes back to the notebook.
    except BaseException:  # noqa: BLE001
        text = traceback.format_exc()
        sys.stderr.write(text)
        outcome = pickle.dumps(("error", text))
        code = 1
    finally:
        writes.cleanup()
    with open(result_path + ".tmp", "wb") as file:
        file.write(outcome)
    os.replace(result_path + ".tmp", result_path)
    return code


if __name__ == "__main__":
    exit_code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(exit_code)
