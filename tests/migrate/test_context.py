# SPDX-License-Identifier: Apache-2.0
"""Tests of context.py: the facts rules share, their declarations, and the order check.

Rules share what they learn through `Context.facts`; each declares what it
writes and reads, in which phase, and `fact_order_problems` (which the engine
runs on every rule list) refuses an order where a rule reads a fact before
every writer of the same phase has run.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import random
import textwrap

import pytest

from parallel_keras import migrate
from parallel_keras.migrate import context
from parallel_keras.migrate import rules as rules_lib
from parallel_keras.migrate.rules import model_api, symbolic_losses

# The Keras 2 VAE idiom: a loss computed from the model's own tensors.
_VAE = textwrap.dedent(
    """\
    import keras
    from keras import backend as K

    inputs = keras.Input((4,))
    outputs = keras.layers.Dense(4)(inputs)
    vae = keras.Model(inputs, outputs)
    vae.add_loss(K.mean(K.square(outputs - inputs)))
    """
)


def _same_phase_pairs(rules):
    """(writer, reader, fact) whose order the check enforces, in `rules`."""
    return [
        (writer, reader, fact)
        for reader in rules
        for fact, read_phase in reader.reads.items()
        for writer in rules
        if writer is not reader and writer.writes.get(fact) == read_phase
    ]


def test_default_rules_list_every_writer_before_its_readers():
    assert context.fact_order_problems(rules_lib.default_rules()) == []


def test_every_fact_has_a_declared_writer_and_reader():
    rules = rules_lib.default_rules()
    written = {fact for rule in rules for fact in rule.writes}
    read = {fact for rule in rules for fact in rule.reads}

    assert written == context.FACT_NAMES
    assert read == context.FACT_NAMES


def test_default_rules_have_same_phase_dependencies_to_check():
    pairs = {
        (type(writer).__name__, type(reader).__name__, fact)
        for writer, reader, fact in _same_phase_pairs(rules_lib.default_rules())
    }

    # The add_loss a symbolic-loss rewrite handled is not flagged by the
    # model-API rule; template access sees multi_gpu_model's aliases.
    assert ("SymbolicLossRule", "ModelApiRule", "symbolic_loss_calls") in pairs
    assert ("MultiGpuModelRule", "TemplateAccessRule", "multi_gpu_names") in pairs


@pytest.mark.parametrize(
    "pair",
    _same_phase_pairs(rules_lib.default_rules()),
    ids=lambda pair: f"{type(pair[0]).__name__}-{type(pair[1]).__name__}-{pair[2]}",
)
def test_reader_moved_before_its_writer_is_reported(pair):
    writer, reader, fact = pair
    rules = [rule for rule in rules_lib.default_rules() if type(rule) is not type(reader)]
    position = next(i for i, rule in enumerate(rules) if type(rule) is type(writer))
    rules.insert(position, type(reader)())

    problems = context.fact_order_problems(rules)

    assert any(
        f"`{fact}`" in problem
        and type(reader).__name__ in problem
        and type(writer).__name__ in problem
        for problem in problems
    ), problems


def test_permutations_pass_exactly_when_every_same_phase_writer_comes_first():
    generator = random.Random(31)
    rules = rules_lib.default_rules()
    passed = failed = 0
    for _ in range(200):
        order = rules[:]
        generator.shuffle(order)
        position = {id(rule): index for index, rule in enumerate(order)}
        sound = all(
            position[id(writer)] < position[id(reader)]
            for writer, reader, _ in _same_phase_pairs(order)
        )
        problems = context.fact_order_problems(order)
        assert (problems == []) == sound, problems
        passed += sound
        failed += not sound
    # Both outcomes were exercised.
    assert passed and failed
    assert context.fact_order_problems(rules[::-1])


def test_reading_before_the_phase_a_fact_is_written_is_reported():
    class EarlyReader(context.Rule):
        reads = {"symbolic_loss_calls": context.Phase.SCAN}

    rules = [symbolic_losses.SymbolicLossRule(), EarlyReader()]

    (problem,) = context.fact_order_problems(rules)
    assert "EarlyReader" in problem and "REWRITE, a later phase" in problem


def test_undeclared_fact_name_is_reported():
    class Misspelled(context.Rule):
        writes = {"handled_call": context.Phase.SCAN}

    (problem,) = context.fact_order_problems([Misspelled()])
    assert "`handled_call`" in problem and "handled_calls" in problem


def test_engine_refuses_a_rule_list_with_a_reader_before_its_writer():
    rules = [model_api.ModelApiRule(), symbolic_losses.SymbolicLossRule()]

    with pytest.raises(ValueError, match="symbolic_loss_calls") as raised:
        migrate.migrate_source(_VAE, rules=rules)
    assert "Received: rules=['ModelApiRule', 'SymbolicLossRule']" in str(raised.value)


def test_the_checked_order_is_what_keeps_a_handled_add_loss_unflagged():
    class Undeclared(model_api.ModelApiRule):
        reads = {}  # Hides the dependency from the check.

    in_order = migrate.migrate_source(
        _VAE, rules=[symbolic_losses.SymbolicLossRule(), model_api.ModelApiRule()]
    )
    reversed_order = migrate.migrate_source(
        _VAE, rules=[Undeclared(), symbolic_losses.SymbolicLossRule()]
    )

    assert "parallel_keras.compat.add_loss(vae, " in in_order.migrated
    assert not [flag for flag in in_order.report.flags if "add_loss" in flag.message]
    # Read before the write, the fact is missing and the handled call is flagged.
    assert [flag for flag in reversed_order.report.flags if "add_loss" in flag.message]


def _facts_touched(module) -> set[str]:
    """Names `X` of every `ctx.facts.X` in `module`'s source."""
    tree = ast.parse(inspect.getsource(module))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "facts"
    }


def test_every_fact_a_rule_module_touches_is_declared_there():
    modules = {inspect.getmodule(type(rule)) for rule in rules_lib.default_rules()}
    touched_anywhere = set()
    for module in modules:
        touched = _facts_touched(module)
        touched_anywhere |= touched
        declared = {
            fact
            for rule_class in vars(module).values()
            if inspect.isclass(rule_class) and issubclass(rule_class, context.Rule)
            for fact in (*rule_class.writes, *rule_class.reads)
        }
        assert touched <= declared, (module.__name__, touched - declared)
    assert touched_anywhere == context.FACT_NAMES


def test_each_file_starts_with_empty_facts():
    fresh = context.Facts()

    assert all(not getattr(fresh, field.name) for field in dataclasses.fields(fresh))
    assert context.Facts().handled_calls is not fresh.handled_calls
