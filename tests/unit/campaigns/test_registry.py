"""The algorithms' registry (:mod:`trieste_scalable.campaigns.algorithms.registry`): every
entry builds the model and rule it names through its family's builder, the command line and the
help texts read their names and capabilities from it, and no module of the application tests an
algorithm's name itself."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset

import trieste_scalable
from trieste_scalable import acquisition
from trieste_scalable.campaigns.algorithms import builders as algorithms
from trieste_scalable.campaigns.algorithms.registry import ALGORITHMS, algorithm, listed, names
from trieste_scalable.campaigns.spec.campaign import CampaignSpec, OptimizeSpec
from trieste_scalable.cli.arguments import parser
from trieste_scalable.errors import UsageError


def _data() -> Dataset:
    x = np.random.default_rng(0).uniform(size=(12, 2))
    return Dataset(tf.constant(x), tf.constant(np.sin(3 * x[:, :1])))


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_each_entry_builds_the_rule_it_names_through_its_familys_builder(name: str) -> None:
    entry = ALGORITHMS[name]
    assert entry.family in algorithms.BUILDERS
    model, rule = algorithms.build(
        name,
        _data(),
        noise_variance=0.01,
        width=acquisition.ConfidenceWidth("constant", beta=2.0),
        batch_size=4,
        max_batch_size=None,
        fit_hyperparameters=False,
        seed=0,
    )
    expected = getattr(acquisition, entry.rule, None) or getattr(algorithms, entry.rule)
    assert isinstance(rule, expected)
    assert (
        dict(entry.rule_options).items()
        <= {
            key: getattr(rule, key, getattr(rule, f"_{key}", None))
            for key in dict(entry.rule_options)
        }.items()
    )
    assert model is not None


def test_an_unknown_name_and_a_capability_a_rule_lacks_are_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="unknown algorithm 'ucb': choose from bbkb, "):
        algorithm("ucb")
    common = dict(
        noise_variance=0.01,
        width=acquisition.ConfidenceWidth("constant"),
        batch_size=4,
        max_batch_size=None,
        fit_hyperparameters=False,
        seed=0,
    )
    epochs = names(lambda entry: entry.epochs)
    assert epochs == ("mini-ucb", "mini-ei")
    with pytest.raises(ValueError, match="cannot follow fixed batches"):
        algorithms.build(epochs[0], _data(), fixed_batches=True, **common)
    with pytest.raises(UsageError, match="--batch-policy fixed: mini-ei's epochs"):
        OptimizeSpec(algorithm="mini-ei", batch_policy="fixed")
    with pytest.raises(UsageError, match="--regulariser applies to bbkb, bbkb-local, bkb, gp-bucb"):
        OptimizeSpec(algorithm="ts", regulariser=0.1)


def test_the_command_line_and_the_help_texts_read_the_registry() -> None:
    commands = parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for command in ("screen", "optimize", "propose"):
        option = next(a for a in commands[command]._actions if "--algorithm" in a.option_strings)
        assert tuple(option.choices) == tuple(ALGORITHMS)
    assert CampaignSpec.help_of("regulariser").startswith(
        listed(lambda entry: entry.hallucinated_batches) + ":"
    )
    assert CampaignSpec.help_of("ratio_threshold").startswith(
        "bbkb, bbkb-local, gp-bucb, mini-ucb, mini-ei:"
    )
    assert "4 times the number of workers for gp-bucb" in CampaignSpec.help_of("batch_size")
    assert "ts: the SVGP's inducing points (default 1000 in screen, 500 in optimize)" in (
        CampaignSpec.help_of("inducing")
    )


def test_the_memory_estimates_chunk_is_the_models() -> None:
    import inspect

    from trieste_scalable.campaigns.candidates.memory_estimate import CHUNK
    from trieste_scalable.models.base import ReplicatedGPBase

    default = inspect.signature(ReplicatedGPBase.__init__).parameters["chunk_size"].default
    assert CHUNK == default == 2048


def test_no_module_of_the_application_tests_an_algorithms_name() -> None:
    """Names live in the registry; the library's rules name themselves for their logs only."""
    root = Path(trieste_scalable.__file__).parent
    quoted = re.compile("[\"'](" + "|".join(map(re.escape, ALGORITHMS)) + ")[\"']")
    found = []
    for path in sorted(root.rglob("*.py")):
        part = path.relative_to(root).parts[0]
        if path.name == "registry.py" or part in ("acquisition", "models"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if quoted.search(line) and "selector" not in line and not line.strip().startswith("#"):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not found, found
