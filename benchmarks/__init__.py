# SPDX-License-Identifier: Apache-2.0
"""Benchmarks for parallel_keras: one command, `python -m benchmarks`.

Its default command runs the benchmark suite (`benchmarks/suite/`): every
model x parallelism mode x replica count, each in its own process, with a
JSON record per run, a table and a plot. The other commands
(`python -m benchmarks COMMAND`, listed in `__main__.py`) each measure one
feature with their own method; every one times steps with `timing`.

The suite is not part of the installed package: run it from a checkout.
"""
