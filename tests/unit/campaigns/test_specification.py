"""The typed campaign specification: one place for every setting's type, default and help; the
command line's parser generated from it; checked where it is built, with the command line's
wording; defaults resolved into a new specification; stored in and reloaded from ``run.json``;
and the moved modules' old import paths (issue: a typed specification)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from trieste_scalable.campaigns.migrations import LEGACY_SETTINGS
from trieste_scalable.campaigns.screen import screen
from trieste_scalable.campaigns.spec.campaign import OptimizeSpec
from trieste_scalable.campaigns.spec.defaults import resolved
from trieste_scalable.campaigns.spec.library import ScreenSpec
from trieste_scalable.campaigns.spec.record import (
    SPECIFICATIONS,
    changed_settings,
    read_record,
    record,
)
from trieste_scalable.cli.arguments import offered, parser, spec_of
from trieste_scalable.errors import CampaignError, UsageError

FIXTURES = Path(__file__).parents[2] / "fixtures" / "old_campaigns"


def test_a_specification_in_a_script() -> None:
    # --- example start
    from trieste_scalable.campaigns.spec.defaults import resolved
    from trieste_scalable.campaigns.spec.library import ScreenSpec

    spec = ScreenSpec(library="library.smi", objective="qed", budget=200, batch_size=20)
    assert spec.algorithm is None  # resolved for the campaign:
    ready = resolved(spec)  # a new specification; spec is unchanged (frozen)
    assert (ready.algorithm, ready.batch_policy, ready.fingerprint) == (
        "gp-bucb",
        "fixed",
        "atom-pair-counts",
    )
    assert ready.batch == 20 and ready.budget == 200
    # every setting with its type, default and help
    budget = {f.name: f for f in dataclasses.fields(ScreenSpec)}["budget"]
    assert (budget.type, budget.default) == ("int", 1000)
    assert budget.metadata["help"] == "evaluations after the initial design"
    # --- example end
    assert spec.algorithm is None and spec != ready
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.budget = 3  # type: ignore[misc]


@pytest.mark.parametrize("command", sorted(SPECIFICATIONS))
def test_the_parser_is_generated_from_the_specification(command: str) -> None:
    spec_type = SPECIFICATIONS[command]
    subparser = parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    actions = {action.dest: action for action in subparser._actions}
    for spec_field in offered(spec_type):
        action = actions[spec_field.name]
        # a command that continues its directory's campaign takes the settings not given from it
        default = argparse.SUPPRESS if spec_type.continues else spec_field.default
        assert action.default == default, spec_field.name
        assert action.help == spec_type.help_of(spec_field.name), spec_field.name
        assert "{" not in str(action.help), spec_field.name
        choices = spec_field.metadata["choices"]
        assert tuple(action.choices or ()) == choices, spec_field.name
    assert set(actions) - {"help"} == {f.name for f in offered(spec_type)}
    assert {f.name for f in dataclasses.fields(spec_type)} - set(actions) == set(
        spec_type.not_offered
    )
    assert spec_of(parser().parse_args([command])) == spec_type()  # the same defaults


def test_the_command_line_and_keywords_build_the_same_specification() -> None:
    argv = ["screen", "--library", "x.smi", "--minimize", "--budget", "7", "--noise", "0"]
    argv += ["--objective", "qed", "--fit", "--exploration-rate", "1"]
    given = dict(library="x.smi", lower_is_better=True, budget=7, objective="qed")
    given |= dict(fit=True, exploration_rate=1)
    assert spec_of(parser().parse_args(argv)) == ScreenSpec(**given)


@pytest.mark.parametrize(
    "settings, error, message",
    [
        (dict(lower_is_better="no"), TypeError, "lower_is_better must be True or False, got 'no'"),
        (dict(budget="ten"), TypeError, "budget must be an integer, got 'ten' \\(str\\)"),
        (dict(budget=None), TypeError, "budget must be an integer, got None"),
        (dict(budget=2.5), TypeError, "budget must be an integer, got 2.5"),
        (dict(budget=True), TypeError, "budget must be an integer, got True"),
        (dict(batch_size="5"), TypeError, "batch_size must be an integer or None, got '5'"),
        (dict(initial="10"), TypeError, "initial must be an integer"),
        (dict(noise="0.1"), TypeError, "noise must be a number, got '0.1'"),
        (dict(fit=True, exploration_rate="3"), TypeError, "exploration_rate must be a number"),
        (dict(fingerprint_width="2048"), TypeError, "fingerprint_width must be an integer"),
        (dict(library=["a.smi"]), TypeError, "library must be a path \\(str or os.PathLike\\)"),
        (dict(library=None), TypeError, "library must be a path"),
        (dict(logdir=None), TypeError, "logdir must be a path"),
        (dict(logdir=3), TypeError, "logdir must be a path"),
        (dict(objective=None), TypeError, "objective must be a string, got None"),
        (dict(seed="abc"), TypeError, "seed must be an integer, got 'abc'"),
        (dict(seed=-1), UsageError, "--seed must be at least 0, got -1"),
        (dict(command="optimize"), TypeError, "screen\\(\\) has no setting 'command'"),
        (dict(quiet="False"), TypeError, "quiet must be True or False"),
        (dict(skip_invalid="no"), TypeError, "skip_invalid must be True or False"),
        (dict(algorithm="TS"), UsageError, "--algorithm must be one of bbkb, .*got 'TS'"),
        (dict(exploration_rate=3.0), UsageError, "--exploration-rate applies to fitted models"),
        (dict(variance_optimism=1.0), UsageError, "--variance-optimism applies to fitted"),
        (dict(budget=0), UsageError, "--budget must be positive, got 0"),
        (dict(fingerprint="ecfp"), UsageError, "--fingerprint must be one of"),
    ],
)
def test_screen_checks_every_setting_before_anything_is_written(
    tmp_path: Path, settings: dict[str, Any], error: type, message: str
) -> None:
    logdir = tmp_path / "run"
    with pytest.raises(error, match=message):
        screen(**{"logdir": logdir, "library": "enamine-10k", **settings})
    assert not logdir.exists()


def test_paths_may_be_path_objects_and_numbers_numpy_scalars() -> None:
    import numpy as np

    spec = ScreenSpec(library=Path("lib.smi"), logdir=Path("runs/x"), budget=np.int64(5))
    assert (spec.library, spec.logdir, spec.budget) == ("lib.smi", "runs/x", 5)
    assert type(spec.budget) is int and type(ScreenSpec(noise=1).noise) is float
    json.dumps(dataclasses.asdict(spec))  # run.json can hold it


def test_resolution_follows_the_campaign() -> None:
    assert resolved(OptimizeSpec()).algorithm == "bbkb"
    assert resolved(OptimizeSpec()).batch_policy == "adaptive"
    assert resolved(ScreenSpec(algorithm="mini-ucb")).batch_policy == "adaptive"

    # asynchronous campaigns: the one default rule, its fixed batches four points a worker;
    # the other rules adaptive (or as given), two points a worker
    def asynchronous(**settings: Any) -> tuple[str, int, str]:
        spec = resolved(ScreenSpec(objective="qed", workers=4, asynchronous=True, **settings))
        return spec.algorithm, spec.batch, spec.batch_policy

    assert asynchronous() == ("gp-bucb", 16, "fixed")
    assert asynchronous(algorithm="ts") == ("ts", 8, "adaptive")
    assert asynchronous(algorithm="bbkb") == ("bbkb", 8, "adaptive")
    assert asynchronous(batch_policy="adaptive") == ("gp-bucb", 8, "adaptive")
    assert asynchronous(batch_size=5) == ("gp-bucb", 5, "fixed")
    assert asynchronous(algorithm="bbkb", batch_policy="fixed") == ("bbkb", 8, "fixed")
    # over a make-on-demand space (its acquisitions cost mostly their pool), twice as many
    reaction = dict(reaction="[C:1][OH]>>[C:1]N", reagents=["a.smi"])
    assert asynchronous(**reaction) == ("gp-bucb", 32, "fixed")
    assert asynchronous(algorithm="ts", **reaction) == ("ts", 16, "adaptive")
    spec = resolved(ScreenSpec(objective="qed", workers=4, asynchronous=True, **reaction))
    assert spec.batch_cap() == 16
    assert resolved(ScreenSpec(objective="qed", workers=4, asynchronous=True)).batch_cap() == 8
    with pytest.raises(UsageError, match="--batch-policy fixed: mini-ei's epochs"):
        resolved(ScreenSpec(algorithm="mini-ei", batch_policy="fixed"))
    with pytest.raises(ValueError, match="not resolved"):
        ScreenSpec().rule  # noqa: B018


def test_the_outcome_transform_defaults_to_what_was_measured_best_where(tmp_path: Path) -> None:
    """auto over a make-on-demand space, none over a library; a resumed campaign keeps its own,
    none for one logged before the setting existed; a given one is kept."""
    reaction = dict(reaction="[C:1][OH]>>[C:1]N", reagents=["a.smi"], objective="qed")
    assert resolved(ScreenSpec(**reaction)).transform == "auto"
    assert resolved(ScreenSpec(objective="qed")).transform == "none"
    assert resolved(ScreenSpec(objective="qed", transform="log")).transform == "log"
    assert resolved(ScreenSpec(transform="none", **reaction)).transform == "none"
    (tmp_path / "run.json").write_text(json.dumps(dict(command="screen", **reaction)))
    resumed = ScreenSpec(logdir=str(tmp_path), resume=True, **reaction)
    assert resolved(resumed).transform == "none"


def test_run_json_stores_and_reloads_the_specification(tmp_path: Path) -> None:
    spec = resolved(ScreenSpec(library="lib.smi", objective="logp", budget=9, seed=4))
    path = tmp_path / "run.json"
    path.write_text(record(spec, "abc"))
    loaded = read_record(path)
    assert loaded.spec == spec and loaded.library_hash == "abc"
    assert changed_settings(loaded.spec, dataclasses.replace(spec, budget=20, quiet=True)) == {}
    assert changed_settings(loaded.spec, dataclasses.replace(spec, seed=5)) == {"seed": (4, 5)}


@pytest.mark.parametrize("campaign", ["sync_optimize", "sync_screen", "workers_screen"])
def test_old_campaign_records_load_with_what_they_ran_with(campaign: str) -> None:
    saved = json.loads((FIXTURES / campaign / "run.json").read_text())
    loaded = read_record(FIXTURES / campaign / "run.json")
    assert loaded.library_hash == saved["library_sha256"]
    assert loaded.spec.command == saved["command"]
    for name, value in saved.items():
        if name not in ("command", "library_sha256"):
            assert getattr(loaded.spec, name) == value, name
    assert loaded.spec.batch_policy == LEGACY_SETTINGS["batch_policy"]  # before it existed
    if isinstance(loaded.spec, ScreenSpec):
        assert (loaded.spec.radius, loaded.spec.fingerprint_width) == (2, 1024)
        assert not loaded.spec.keep_radicals  # no reaction: nothing to keep


def test_a_make_on_demand_campaign_from_before_radicals_were_left_out_keeps_them(
    tmp_path: Path,
) -> None:
    """Its space held them: resumed, the same tuples name the same products (a campaign
    recorded since says what it chose)."""
    path = tmp_path / "run.json"
    reaction = dict(command="screen", reaction="[N:1]>>[N:1]", reagents=["a.smi"])
    path.write_text(json.dumps(reaction))
    assert read_record(path).spec.keep_radicals
    path.write_text(json.dumps(reaction | dict(keep_radicals=False)))
    assert not read_record(path).spec.keep_radicals
    with pytest.raises(UsageError, match="--keep-radicals keeps a make-on-demand space's"):
        ScreenSpec(keep_radicals=True)


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"command": "screen", "budget": "x"}', "budget must be an integer"),
        ('{"command": "screen", "bach_size": 3}', "screen has no setting 'bach_size'"),
        ('{"budget": 3}', "no campaign command"),
        ('{"command": "screen", "algorithm": "nope"}', "--algorithm must be one of"),
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "is damaged"),
    ],
)
def test_a_damaged_record_is_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "run.json"
    path.write_text(content)
    with pytest.raises(CampaignError, match=message) as raised:
        read_record(path)
    assert str(path) in str(raised.value)


def test_resuming_a_campaign_of_the_other_command_is_refused(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "sync_optimize", tmp_path / "run")
    spec = ScreenSpec(logdir=str(tmp_path / "run"), resume=True)
    with pytest.raises(UsageError, match="holds a campaign of optimize, not of screen"):
        resolved(spec)
