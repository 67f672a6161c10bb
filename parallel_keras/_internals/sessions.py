# SPDX-License-Identifier: Apache-2.0
"""TF1 sessions: the `ConfigProto` a `tf.compat.v1.Session` was made with.

`parallel_keras.compat.set_session` carries a session's GPU options over to
`tf.config`. `tf.compat.v1.Session` keeps the config it was given only as
`BaseSession._config` (tensorflow/python/client/session.py, set in
`BaseSession.__init__`; checked on TensorFlow 2.16 to 2.21); there is no
public getter. Canary: tests/internals/test_sessions.py.
"""

from __future__ import annotations

from typing import Any


def session_config(session: Any) -> Any:
    """The `ConfigProto` `session` was created with, or None.

    Args:
        session: A `tf.compat.v1.Session` (or anything else: None then).

    Returns:
        The config, or None when the session has none or is not a TF1
        session.
    """
    return getattr(session, "_config", None)
