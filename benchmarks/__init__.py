"""Benchmarks for parallel_keras.

`python -m benchmarks` runs the benchmark suite (`benchmarks/suite/`): every
model x parallelism mode x replica count, each in its own process, with a
JSON record per run, a table and a plot. The other files here are
single-purpose scripts, each measuring one feature.

The suite is not part of the installed package: run it from a checkout.
"""
