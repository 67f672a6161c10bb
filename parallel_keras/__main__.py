# SPDX-License-Identifier: Apache-2.0
"""`python -m parallel_keras ...`: the same as the `parallel-keras` command."""

from parallel_keras.cli.main import run

if __name__ == "__main__":
    run()
