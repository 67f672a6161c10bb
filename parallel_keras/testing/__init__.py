# SPDX-License-Identifier: Apache-2.0
"""Helpers for testing code that uses parallel_keras, shipped to users.

Like `tfds.testing`, these are public: a project that trains with
parallel_keras can use them in its own tests.
"""

from __future__ import annotations

from parallel_keras import _exports

# The exports are the imports of `__init__.pyi`, the one list of them.
__getattr__, __dir__, __all__ = _exports.attach_stub(__name__, __file__)
