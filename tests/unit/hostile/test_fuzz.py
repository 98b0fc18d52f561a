"""Faults and bad input, one parametrised case per failure class: each ends in a clear error or a
documented safe recovery, with nothing lost, nothing evaluated twice and no NaN predicted."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any, Callable

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.space import Box, DiscreteSearchSpace

from trieste_scalable.acquisition import (
    BBKB,
    BKB,
    GPBUCB,
    BatchThompsonSampling,
    ConfidenceWidth,
    MiniGPEI,
    MiniGPUCB,
)
from trieste_scalable.acquisition.minimeta import MAX_REPEATS, repeats
from trieste_scalable.campaigns.directory.lock import CampaignLock
from trieste_scalable.cli import main
from trieste_scalable.kernels import Tanimoto
from trieste_scalable.models import AdaptiveSVGP, ExactDictionary, NystromGPR, ReplicatedGPR
from trieste_scalable.stores.cache import cache_dir

from ...util import moses, replicated_dataset, screen_argv, se_kernel


@pytest.fixture(scope="module")
def smiles() -> list[str]:
    return moses(120)


def _screen(tmp_path: Path, smiles: list[str], *extra: str) -> list[str]:
    library = tmp_path / "library.smi"
    if not library.exists():
        library.write_text("\n".join(smiles) + "\n")
    return screen_argv(library, tmp_path / "run", *extra)


def _rows(logdir: Path) -> list[dict[str, str]]:
    with open(logdir / "evaluations.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def _assert_sound_log(logdir: Path, total: int) -> None:
    rows = _rows(logdir)
    assert len(rows) == total
    assert len({row["smiles"] for row in rows}) == total  # nothing evaluated twice
    assert all(np.isfinite(float(row["observed"])) for row in rows)


# ------------------------------------------------------------------ campaign directory faults
def _cut_last_line(logdir: Path) -> None:
    path = logdir / "evaluations.csv"
    text = path.read_text()
    path.write_text(text[: len(text) - 8])  # a crash in the middle of the last row


def _garbage_row(logdir: Path) -> None:
    with open(logdir / "evaluations.csv", "a") as handle:
        handle.write("3,not-a-number,CCO,0.5,0.5,99,1.0,1.0,1.0,host:1,\n")


def _damaged_settings(logdir: Path) -> None:
    (logdir / "run.json").write_text('{"budget": 20, "algo')


def _edited_library(logdir: Path) -> None:
    library = logdir.parent / "library.smi"
    library.write_text("CCO\n" + library.read_text())  # one line prepended


def _edited_library_old_run_json(logdir: Path) -> None:
    settings = json.loads((logdir / "run.json").read_text())
    del settings["library_sha256"]  # a campaign from before the hash: rows are checked instead
    (logdir / "run.json").write_text(json.dumps(settings))
    _edited_library(logdir)


@pytest.mark.parametrize(
    "damage, code, message",
    [
        (_cut_last_line, 0, None),
        (_garbage_row, 1, "line 32: job, batch, index or observed is not a number"),
        (_damaged_settings, 1, "run.json is damaged"),
        (_edited_library, 1, "library's content changed"),
        (_edited_library_old_run_json, 1, "the library changed since the campaign ran"),
    ],
)
def test_damaged_campaign_directory_is_recovered_or_refused(
    tmp_path: Path,
    smiles: list[str],
    capsys: pytest.CaptureFixture,
    damage: Callable[[Path], None],
    code: int,
    message: str | None,
) -> None:
    logdir = tmp_path / "run"
    assert main(_screen(tmp_path, smiles, "--algorithm", "random", "--budget", "20")) == 0
    damage(logdir)
    before = (logdir / "evaluations.csv").read_bytes()
    capsys.readouterr()
    resumed = main(_screen(tmp_path, smiles, "--algorithm", "random", "--budget", "40", "--resume"))
    err = capsys.readouterr().err
    assert resumed == code, err
    if message is None:  # recovered: the partial row is reported, dropped and redone once
        assert "dropped a partial last line" in err
        _assert_sound_log(logdir, 50)
    else:  # refused with one clear line, and nothing lost
        assert message in err and len(err.strip().splitlines()) == 1
        assert (logdir / "evaluations.csv").read_bytes() == before


def test_second_campaign_on_a_held_directory_names_the_holder(
    tmp_path: Path, smiles: list[str], capsys: pytest.CaptureFixture
) -> None:
    logdir = tmp_path / "run"
    assert main(_screen(tmp_path, smiles, "--algorithm", "random", "--budget", "20")) == 0
    before = (logdir / "evaluations.csv").read_bytes()
    with CampaignLock(logdir):  # a running campaign holds the directory
        for extra in (["--resume"], []):
            args = _screen(tmp_path, smiles, "--algorithm", "random", "--budget", "40", *extra)
            assert main(args) == 1
            assert "in use by another campaign (pid" in capsys.readouterr().err
    assert (logdir / "evaluations.csv").read_bytes() == before
    args = _screen(tmp_path, smiles, "--algorithm", "random", "--budget", "40", "--resume")
    assert main(args) == 0  # once the holder is gone
    _assert_sound_log(logdir, 50)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["optimize", "--lengthscale", "0"], "--lengthscale must be positive"),
        (["optimize", "--kernel-variance", "nan"], "--kernel-variance must be positive"),
        (["optimize", "--noise-variance", "1e-13"], "--noise-variance must be finite and above"),
        (["optimize", "--noise-variance", "inf"], "--noise-variance must be finite and above"),
        (["optimize", "--beta", "-1"], "--beta must be positive"),
        (["optimize", "--max-batch-size", "0"], "--max-batch-size must be positive"),
        (["screen", "--noise", "nan"], "--noise must be at least 0, got nan"),
        (["screen", "--budget", "0"], "--budget must be positive"),
        (["screen", "--scoring-actors", "0"], "--scoring-actors must be positive"),
        (["screen", "--scoring-actors", "2"], "bbkb-local, bkb, gp-bucb, ts over a library store"),
    ],
)
def test_invalid_settings_write_nothing_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], message: str
) -> None:
    logdir = tmp_path / "run"
    assert main([*extra, "--logdir", str(logdir), "--quiet"]) == 2
    assert message in capsys.readouterr().err
    assert not logdir.exists()  # nothing blocks a corrected rerun


def test_failure_before_the_first_batch_keeps_the_initial_design_for_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from trieste_scalable.campaigns.engine import loop as engine

    def broken(*args: Any, **kwargs: Any) -> None:
        raise tf.errors.InvalidArgumentError(None, None, "Cholesky failed\nwith details")

    args = ["optimize", "--budget", "20", "--logdir", str(tmp_path / "run"), "--quiet"]
    monkeypatch.setattr(engine.AskTellOptimizer, "ask", broken)
    assert main(args) == 1  # a runtime failure: exit 1, its line and where the record is
    assert capsys.readouterr().err.strip().splitlines() == [
        "trieste-scalable: error: InvalidArgumentError: Cholesky failed",
        f"the 10 evaluations logged are kept in {tmp_path / 'run'}/evaluations.csv: fix the "
        "cause and continue with the same command plus --resume",
    ]
    logged = (tmp_path / "run" / "evaluations.csv").read_text().splitlines()
    assert len(logged) == 11  # the initial design, never erased
    monkeypatch.undo()
    assert main(args + ["--resume"]) == 0
    after = (tmp_path / "run" / "evaluations.csv").read_text().splitlines()
    assert after[:11] == logged and len(after) == 31


def test_last_batch_shrinks_and_resume_may_change_the_batch_size(
    tmp_path: Path, smiles: list[str]
) -> None:
    logdir = tmp_path / "run"
    # 120 molecules (fewer unique fingerprints); the budget leaves less than one batch at the end
    base = _screen(tmp_path, smiles[:60], "--algorithm", "ts", "--batch-size", "25")
    assert main(base + ["--budget", "45"]) == 0
    _assert_sound_log(logdir, 55)
    assert main(base[:-2] + ["--batch-size", "3", "--budget", "48", "--resume"]) == 0
    _assert_sound_log(logdir, 58)


@pytest.mark.parametrize("algorithm", ["bbkb", "mini-ucb"])
def test_screening_never_re_evaluates_a_molecule(
    tmp_path: Path, smiles: list[str], algorithm: str
) -> None:
    # (every rule's exclusion is tested below, in an ask/tell loop run to exhaustion)
    assert main(_screen(tmp_path, smiles, "--algorithm", algorithm, "--budget", "15")) == 0
    _assert_sound_log(tmp_path / "run", 25)


@pytest.mark.parametrize("damage", ["empty", "short", "garbage"])
def test_damaged_fingerprint_cache_is_recomputed(
    tmp_path: Path, smiles: list[str], damage: str
) -> None:
    from trieste_scalable.problems.screening import screening_problem

    library = tmp_path / "library.smi"
    library.write_text("\n".join(smiles) + "\n")
    clean = screening_problem(str(library))
    for path in cache_dir().glob("fingerprints-*.npy"):
        if damage == "empty":
            path.write_bytes(b"")
        elif damage == "short":  # 20 fingerprints where the library has 120 molecules
            np.save(path, np.load(path)[:20])
        else:
            path.write_bytes(b"\x93NUMPY garbage")
    again = screening_problem(str(library))
    np.testing.assert_array_equal(again.points, clean.points)
    np.testing.assert_array_equal(again.values, clean.values)


# ------------------------------------------------------------------ numerics
def _build(name: str, dtype: Any = np.float64) -> Any:
    with gpflow.config.as_context(gpflow.config.Config(float=dtype)):
        kernel = se_kernel(lengthscale=0.3)
    if name == "nystrom":
        return NystromGPR(kernel, 0.1, dictionary=ExactDictionary())
    if name == "svgp":
        return AdaptiveSVGP(kernel, 0.1, inducing=40)
    return ReplicatedGPR(kernel, 0.1)


def _hyperparameters(model: Any) -> np.ndarray:
    kernel = model.get_kernel()
    values = [kernel.variance.numpy(), kernel.lengthscales.numpy(), model.get_observation_noise()]
    return np.array([float(v) for v in values])


@pytest.mark.parametrize("name", ["nystrom", "svgp", "replicated"])
@pytest.mark.parametrize(
    "offset", [pytest.param(1e8, marks=pytest.mark.slow, id="1e8"), pytest.param(1e12, id="1e12")]
)
def test_fits_do_not_depend_on_an_output_offset(name: str, offset: float) -> None:
    data = replicated_dataset(0, num_unique=40, num_repeats=10)
    shifted = data.observations + offset
    exact = shifted - offset  # the offset data, offset removed exactly (Sterbenz)
    fits = []
    for y in (shifted, exact):
        model = _build(name)
        dataset = Dataset(data.query_points, y)
        model.update(dataset)
        model.optimize(dataset)
        fits.append(_hyperparameters(model))
        mean, var = model.predict(data.query_points)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))
    np.testing.assert_allclose(fits[0], fits[1], rtol=1e-6)
    if offset <= 1e8:  # rounding the data to float64 at 1e8 changes them by < 1e-8
        model = _build(name)
        model.update(data)
        model.optimize(data)
        np.testing.assert_allclose(fits[0], _hyperparameters(model), rtol=1e-6)


@pytest.mark.parametrize("name", ["nystrom", "svgp", "replicated"])
def test_float32_fits_never_end_worse_than_they_start(name: str) -> None:
    data64 = replicated_dataset(1, num_unique=60, num_repeats=0)
    data = Dataset(*(tf.cast(t, tf.float32) for t in data64.astuple()))
    model = _build(name, np.float32)
    model.update(data)
    start = float(-model._objective()())
    with _maybe_warns():
        model.optimize(data)
    assert float(-model._objective()()) <= start + 1e-3 * abs(start)
    mean, var = model.predict(data.query_points)
    assert mean.dtype == tf.float32
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))


class _maybe_warns:
    """A rejected fit warns; an accepted one does not: both are fine here."""

    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *args: object) -> None:
        self._catch.__exit__(*args)


def test_fit_that_ends_worse_is_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    data = replicated_dataset(2)
    model = _build("replicated")
    model.update(data)
    before = _hyperparameters(model)

    def worse(self: Any, loss: Callable, variables: list, **kwargs: Any) -> None:
        for variable in variables:
            variable.assign(variable + 5.0)  # a far worse point, "successfully" reached

    monkeypatch.setattr(gpflow.optimizers.Scipy, "minimize", worse)
    with pytest.warns(UserWarning, match="worse than its start"):
        assert model.optimize(data) is None
    np.testing.assert_allclose(_hyperparameters(model), before)
    assert model.fit_rejections == 1


def test_repeats_are_capped_even_at_zero_variance() -> None:
    assert repeats(2.0, 0.1, 0.0) == MAX_REPEATS
    assert repeats(2.0, 0.1, 1e-300) == MAX_REPEATS  # would overflow to a huge count
    assert repeats(2.0, 0.1, 0.0, cap=7) == 7
    assert repeats(2.0, 0.1, 0.3) == 1
    with pytest.raises(ValueError, match="NaN"):
        repeats(2.0, 0.1, float("nan"))


def test_mini_rule_at_an_all_zero_fingerprint_asks_a_bounded_batch() -> None:
    """The LCB picks the zero-variance point (its prior mean is lowest); MINI-GP-EI never does
    (its improvement there is 0), and both size batches with the same capped :func:`repeats`."""
    fingerprints = np.array([[0, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=np.float64)
    data = Dataset(tf.constant(fingerprints[1:]), tf.constant([[0.2], [0.4]], tf.float64))
    space = DiscreteSearchSpace(tf.constant(fingerprints))  # row 0: all zero, variance 0
    model = ReplicatedGPR(Tanimoto(), 0.01, data, fit_hyperparameters=False, prior_mean=-5.0)
    assert float(model.predict(space.points[:1])[1][0, 0]) == 0.0
    for budget, expected in ((40, 40), (None, MAX_REPEATS)):
        rule = MiniGPUCB(width=ConfidenceWidth("constant", beta=3.0), budget=budget)
        batch = AskTellOptimizer(space, data, model, rule).ask()
        np.testing.assert_array_equal(batch, np.zeros((expected, 4)))


# ------------------------------------------------------------------ rules
def _discrete_setup(dtype: Any = np.float64) -> tuple[DiscreteSearchSpace, Dataset]:
    rng = np.random.default_rng(0)
    points = rng.uniform(size=(50, 2)).astype(dtype)
    data = Dataset(tf.constant(points[:8]), tf.constant(np.sin(5 * points[:8, :1])))
    return DiscreteSearchSpace(tf.constant(points)), data


RULES: dict[str, Callable[[], tuple[Any, Any]]] = {
    "bbkb": lambda: (BBKB(width="constant", exclude_evaluated=True), "nystrom"),
    "bkb": lambda: (BKB(width="constant", exclude_evaluated=True), "nystrom"),
    "gp-bucb": lambda: (GPBUCB(width="constant", exclude_evaluated=True), "exact"),
    "mini-ucb": lambda: (MiniGPUCB(width="constant", exclude_evaluated=True), "replicated"),
    "mini-ei": lambda: (MiniGPEI(width="constant", exclude_evaluated=True), "replicated"),
    "ts": lambda: (BatchThompsonSampling(10, exclude_evaluated=True, num_features=200), "svgp"),
}


def _model(kind: str, data: Dataset, dtype: Any = np.float64) -> Any:
    with gpflow.config.as_context(gpflow.config.Config(float=dtype)):
        kernel = se_kernel(lengthscale=0.3)
    if kind == "nystrom":
        return NystromGPR(kernel, 0.1, data, fit_hyperparameters=False)
    if kind == "exact":
        exact = ExactDictionary()
        return NystromGPR(kernel, 0.1, data, dictionary=exact, fit_hyperparameters=False)
    if kind == "svgp":
        return AdaptiveSVGP(kernel, 0.1, data, inducing=8, fit_hyperparameters=False)
    return ReplicatedGPR(kernel, 0.1, data, fit_hyperparameters=False)


@pytest.mark.parametrize("name", sorted(RULES))
def test_rules_exclude_evaluated_run_to_exhaustion_and_deep_copy(name: str) -> None:
    space, data = _discrete_setup()
    rule, kind = RULES[name]()
    model = _model(kind, data)
    ask_tell = AskTellOptimizer(space, data, model, rule)
    for _ in range(60):  # until all 50 candidates are evaluated: the last batches shrink
        if ask_tell.dataset.query_points.shape[0] == 50:
            break
        batch = ask_tell.ask()
        y = tf.sin(5 * batch[:, :1])
        ask_tell.tell(Dataset(batch, y))
        copy.deepcopy(rule)  # a used rule copies
    evaluated = ask_tell.dataset.query_points.numpy()
    assert evaluated.shape[0] == 50 and np.unique(evaluated, axis=0).shape[0] == 50
    with pytest.raises(ValueError, match="every candidate has been evaluated"):
        ask_tell.ask()
    mean, var = model.predict(space.points)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))


@pytest.mark.parametrize("name", sorted(RULES))
def test_dtype_mismatch_is_one_clear_error(name: str) -> None:
    space32, _ = _discrete_setup(np.float32)
    _, data = _discrete_setup()
    rule, kind = RULES[name]()
    model = _model(kind, data)
    with pytest.raises(TypeError, match="must share one dtype; got search space float32"):
        rule.acquire_single(space32, model, data)


def test_float32_svgp_with_batch_thompson_sampling() -> None:
    space, data = _discrete_setup(np.float32)
    model = _model("svgp", data, np.float32)
    rule = BatchThompsonSampling(5, num_features=100, exclude_evaluated=True)
    batch = rule.acquire_single(space, model, data)(None)[1]
    assert batch.dtype == tf.float32 and batch.shape == (5, 2)
    box = Box(tf.zeros(2, tf.float32), tf.ones(2, tf.float32))
    on_box = BatchThompsonSampling(3, num_features=100).acquire_single(box, model, data)(None)[1]
    assert on_box.dtype == tf.float32 and on_box.shape == (3, 2)
