# SPDX-License-Identifier: Apache-2.0
"""Everything parallel_keras has replaced in Keras and TensorFlow, listed.

Upstream surface: none of its own. Every site in parallel_keras that
replaces an attribute of a Keras or TensorFlow class or module (a method
wrapped, a method added, a module function wrapped) does it through
`patch`, which makes the change, remembers what was there and registers
it. `installed()` lists those changes, in the order they were made, for a
person debugging what importing or using parallel_keras changed
(`print(parallel_keras.testing.describe_interceptions())`). Each entry
says what was replaced, by which parallel_keras module, when (at
`import keras` with parallel_keras imported, or at the first use of a
feature), why, and how to remove it (`Interception.remove()`, which puts
the original back).

What importing parallel_keras installs is the minimum a legacy Keras 2
script needs with one import changed (see `parallel_keras._placement_hooks`
for why, and `device_placement` and `data_parallel.wrapper_classes` for the
three changes); every other change waits for the feature that needs it.

This module imports neither Keras nor TensorFlow.
"""

from __future__ import annotations

import dataclasses
import threading

# `when` of an interception installed as the process imports Keras.
AT_KERAS_IMPORT = "once the process has imported both parallel_keras and Keras"

_MISSING = object()
_lock = threading.RLock()
_installed: dict[str, Interception] = {}
# target -> what Keras/TensorFlow shipped (or _MISSING), kept across re-installs.
_originals: dict[str, tuple[object, str, object]] = {}


@dataclasses.dataclass(frozen=True)
class Interception:
    """One attribute of Keras or TensorFlow that parallel_keras replaced.

    Attributes:
        target: The dotted name of what was replaced, e.g.
            `'keras.src.ops.node.Node.__init__'`.
        change: What was done to it (`'wrapped'` or `'added'`).
        by: The parallel_keras module that asked for it.
        when: When it is installed, e.g. at `import keras` or at the first
            use of a feature.
        why: What the change is for.
    """

    target: str
    change: str
    by: str
    when: str
    why: str

    @property
    def how_to_remove(self) -> str:
        """How to put the original back."""
        return (
            f"parallel_keras._internals.interceptions.remove({self.target!r}) "
            "restores what Keras/TensorFlow shipped."
        )

    def remove(self) -> None:
        """Puts back what was there before, and unregisters this entry."""
        remove(self.target)

    def __str__(self) -> str:
        return (
            f"{self.target} ({self.change} by {self.by}, {self.when}): {self.why} "
            f"To remove: {self.how_to_remove}"
        )


def _dotted_name(owner: object, name: str) -> str:
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}.{name}"
    return f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"


def patch(
    owner: object,
    name: str,
    replacement: object,
    *,
    by: str,
    when: str,
    why: str,
) -> Interception:
    """Sets `owner.name = replacement` and registers the change.

    Installing the same target again replaces the registered entry (and the
    attribute) without losing the original, so `remove` always restores
    what Keras or TensorFlow shipped.

    Args:
        owner: The class or module whose attribute is replaced.
        name: The attribute's name.
        replacement: What to set it to.
        by: The parallel_keras module installing it (`__name__`).
        when: When this is installed (`AT_KERAS_IMPORT`, or the first use of
            a feature, in words).
        why: What the change is for, in one sentence.

    Returns:
        The registered entry.
    """
    target = _dotted_name(owner, name)
    with _lock:
        if target not in _originals:
            _originals[target] = (owner, name, vars(owner).get(name, _MISSING))
        original = _originals[target][2]
        setattr(owner, name, replacement)
        entry = Interception(
            target=target,
            change="added" if original is _MISSING else "wrapped",
            by=by,
            when=when,
            why=why,
        )
        _installed[target] = entry
        return entry


def is_installed(target: str) -> bool:
    """Whether `target` (a dotted name as in `installed()`) is replaced now."""
    return target in _installed


def remove(target: str) -> None:
    """Restores the original of `target` and unregisters it.

    Raises:
        KeyError: If parallel_keras has not replaced `target`.
    """
    with _lock:
        if target not in _installed:
            raise KeyError(
                f"parallel_keras has not replaced {target!r}. Received: "
                f"target={target!r}. Installed now: {sorted(_installed)}."
            )
        owner, name, original = _originals.pop(target)
        if original is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
        del _installed[target]


def installed() -> tuple[Interception, ...]:
    """What parallel_keras has replaced in Keras/TensorFlow, in install order."""
    with _lock:
        return tuple(_installed.values())


def describe() -> str:
    """`installed()` as text, one entry per paragraph."""
    entries = installed()
    if not entries:
        return "parallel_keras has replaced nothing in Keras or TensorFlow."
    lines = [f"parallel_keras has replaced {len(entries)} attribute(s) of Keras/TensorFlow:"]
    for number, entry in enumerate(entries, start=1):
        lines += [
            f"{number}. {entry.target} ({entry.change})",
            f"   by:     {entry.by}",
            f"   when:   {entry.when}",
            f"   why:    {entry.why}",
            f"   remove: {entry.how_to_remove}",
        ]
    return "\n".join(lines)
