# SPDX-License-Identifier: Apache-2.0
"""`parallel_keras.place_branches`: spread a model's branches over devices.

How branches are found: picture the model as a graph of layer calls with one
source feeding every input and one sink fed by every output. A layer call
that every source-to-sink path goes through (a single input, a shared stem,
a merge such as `concatenate`, everything after it) is trunk. Removing the
trunk leaves connected groups of layer calls; each group is a branch: the
legacy tutorials' two `shared_lstm` calls are two branches, the towers of an
Inception-style block are one branch each. A layer shared by several
branches (one set of weights) runs each call on its own branch's device.

How devices are chosen: each branch costs the parameter count of the layers
it calls (a shared layer counts once per call, since each call does that
much work). Branches are taken from the most to the least costly and each
goes to the device with the least cost so far (ties: the earlier device in
`devices`; branches tie in the order of the model input they read first,
then of run order, so the legacy tutorials' branch on `input_a` gets the first device). Trunk calls get `merge_device`
(default placement unless given), as the legacy tutorials merge on the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
from absl import logging

from parallel_keras import _internals
from parallel_keras import devices as devices_lib
from parallel_keras.device_placement import runtime


def find_branches(model: keras.Model) -> list[list[object]]:
    """The independent branches of a functional model, as lists of nodes.

    Args:
        model: A functional Keras model.

    Returns:
        One list of layer-call nodes per branch, nodes in the order the model
        runs them, branches ordered by the first model input they read, then
        by run order.

    Raises:
        TypeError: If `model` is not a functional Keras model.
    """
    runtime.require_functional(model, "place_branches")
    nodes, parents, input_nodes, output_nodes = _internals.functional_graph(model)
    children: dict[int, list[object]] = {id(node): [] for node in nodes}
    for node in nodes:
        for parent in parents[id(node)]:
            children.setdefault(id(parent), []).append(node)
    output_ids = {id(node) for node in output_nodes}

    def reaches_sink_without(removed: object) -> bool:
        stack = [node for node in input_nodes if node is not removed]
        seen = {id(node) for node in stack}
        while stack:
            node = stack.pop()
            if id(node) in output_ids:
                return True
            for child in children.get(id(node), ()):
                if child is not removed and id(child) not in seen:
                    seen.add(id(child))
                    stack.append(child)
        return False

    trunk = {id(node) for node in nodes if not reaches_sink_without(node)}
    input_ids = {id(node) for node in input_nodes}
    neighbours: dict[int, list[object]] = {id(node): [] for node in nodes}
    for node in nodes:
        for parent in parents[id(node)]:
            if id(parent) in neighbours:
                neighbours[id(node)].append(parent)
                neighbours[id(parent)].append(node)
    branches = []
    assigned: set[int] = set()
    for start in nodes:
        if id(start) in trunk or id(start) in assigned:
            continue
        component, stack = [], [start]
        assigned.add(id(start))
        while stack:
            node = stack.pop()
            component.append(node)
            for other in neighbours[id(node)]:
                if id(other) not in trunk and id(other) not in assigned:
                    assigned.add(id(other))
                    stack.append(other)
        order = {id(node): index for index, node in enumerate(nodes)}
        calls = sorted(
            (node for node in component if id(node) not in input_ids),
            key=lambda node: order[id(node)],
        )
        if calls:
            branches.append(calls)
    first_input = {id(node): index for index, node in enumerate(input_nodes)}

    def first_input_of(branch):
        # The model input a branch reads first: the legacy tutorials' branch on input_a
        # comes before the branch on input_b, as written.
        stack, seen, found = list(branch), set(), len(input_nodes)
        while stack:
            node = stack.pop()
            if id(node) in first_input:
                found = min(found, first_input[id(node)])
            for parent in parents.get(id(node), ()):
                if id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append(parent)
        return found

    return sorted(branches, key=first_input_of)  # Stable: then run order.


def _call_cost(layer: object) -> int:
    count_params = getattr(layer, "count_params", None)
    if count_params is None:
        return 0  # A keras.ops call in a functional model: no weights.
    try:
        return int(count_params())
    except ValueError:
        return 0  # Unbuilt layer.


def _validate_devices(devices: Sequence[str]) -> list[str]:
    if isinstance(devices, str) or not isinstance(devices, (list, tuple)):
        raise TypeError(
            "place_branches needs a list of device strings. Received: "
            f"devices={devices!r}. Pass e.g. devices=['/gpu:0', '/gpu:1']."
        )
    if not devices:
        raise ValueError(
            "place_branches needs at least one device. Received: devices=[]. "
            "Pass e.g. devices=['/gpu:0', '/gpu:1']."
        )
    resolved = [devices_lib.resolve_device(name) for name in devices]
    if len(set(resolved)) != len(resolved):
        raise ValueError(
            "place_branches needs each device once. Received: "
            f"devices={list(devices)!r}. Remove the duplicates."
        )
    return list(devices)


def place_branches(
    model: keras.Model,
    devices: Sequence[str],
    *,
    merge_device: str | None = None,
) -> keras.Model:
    """Assigns the independent branches of a functional model to devices.

    Branches are balanced by parameter count (see the module docstring for
    how branches are found and devices chosen). The placement is set on the
    model in place, replaces any earlier one, is reported by
    `parallel_keras.placement` and survives `.keras` save/load, exactly as
    if each branch had been built inside `parallel_keras.device`.

    Args:
        model: A functional Keras model with at least 2 branches.
        devices: Device strings such as `['/gpu:0', '/gpu:1']`. `'/gpu:i'`
            means simulated CPU device `i` on a machine without GPUs.
        merge_device: Device for the trunk (layer calls before the branches
            split and from the merge on). Defaults to None (default
            placement).

    Returns:
        The same model, placed.

    Raises:
        TypeError: If `model` is not functional or `devices` is not a list
            of strings.
        ValueError: If a device is malformed, missing or repeated, or the
            model has fewer than 2 branches. The model is left unchanged.

    Example:

    >>> import keras, parallel_keras
    >>> input_a, input_b = keras.Input((10, 8)), keras.Input((10, 8))
    >>> shared_lstm = keras.layers.LSTM(4)
    >>> merged = keras.layers.concatenate(
    ...     [shared_lstm(input_a), shared_lstm(input_b)])
    >>> model = keras.Model([input_a, input_b], keras.layers.Dense(2)(merged))
    >>> model = parallel_keras.place_branches(model, ['/cpu:0', '/cpu:1'])
    >>> sorted(c.device for c in parallel_keras.placement(model) if c.device)
    ['/cpu:0', '/cpu:1']
    """
    runtime.require_functional(model, "place_branches")
    device_names = _validate_devices(devices)
    if merge_device is not None:
        devices_lib.resolve_device(merge_device)
    branches = find_branches(model)
    if len(branches) < 2:
        raise ValueError(
            "place_branches needs a functional model with at least 2 "
            "independent branches (groups of layer calls between where the "
            f"model splits and where it merges). Received: model "
            f"{model.name!r} with {len(branches)} branch(es). Place its layer "
            "calls with `with parallel_keras.device(...)` while building it, "
            "or use multi_gpu_model for data parallelism."
        )
    calls = runtime.layer_calls(model)
    layer_of = {id(node): layer for layer, _, node in calls}
    costs = [sum(_call_cost(layer_of[id(node)]) for node in b) for b in branches]
    load = [0] * len(device_names)
    chosen: dict[int, str] = {}
    for index in sorted(range(len(branches)), key=lambda i: -costs[i]):
        target = min(range(len(device_names)), key=lambda d: (load[d], d))
        load[target] += costs[index]
        for node in branches[index]:
            chosen[id(node)] = device_names[target]
    for _, _, node in calls:
        runtime.set_requested_device(node, chosen.get(id(node), merge_device))
    logging.info(
        "parallel_keras: placed %d branches of %r with parameter counts %s on "
        "%s (parameters per device: %s).",
        len(branches),
        model.name,
        costs,
        device_names,
        load,
    )
    return model
