# SPDX-License-Identifier: Apache-2.0
"""The cluster this process belongs to: the bottom layer of multi-worker.

* `settings`: what the entry point (the worker bootstrap) was told by the
  launcher, as plain values; nothing below reads the environment for it.
* `membership`: this process's place in the cluster, from `TF_CONFIG` or a
  cluster resolver.
* `strategy`: the one `MultiWorkerMirroredStrategy` of a cluster worker.
* `writes`: only the chief writes the files the user sees.

`devices`, `data_parallel`, `saving` and `multi_worker` import from here;
nothing here imports them, except the prepared strategy class (see
`strategy`). The launcher and its bootstrap live in `multi_worker`.
"""
