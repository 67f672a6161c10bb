# SPDX-License-Identifier: Apache-2.0
"""Saving and loading: atomic writes, loads that never lie, legacy files.

* `atomic`: every file is written beside its target and renamed into place,
  so a killed process leaves the previous file intact.
* `paths`: output paths checked before any work (no TensorFlow), and the
  temporaries beside them, stale ones of dead writers removed.
* `files`: what kind of file a path holds (Keras archive, Keras 3 weights,
  legacy HDF5), with clear errors for missing, foreign or truncated files.
* `weights`: `load_weights`, which checks a file against the model before
  touching it and leaves the model unchanged on any mismatch.
* `finite`: backups and checkpoints never replace a finite state with a
  non-finite one (NaN, inf).
* `legacy`: Keras 2 HDF5 files, including those written from a
  `multi_gpu_model` parallel model, matched to a template by layer name.
* `legacy_models`: whole-model HDF5 files (`model.save("m.h5")`), loaded
  compiled with their optimizer state, ready to resume training.
"""
