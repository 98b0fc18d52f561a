"""Hostile input through the Python API and the command line's checks (issue 27's cases that do
not need workers): each gets a clear error naming the argument, the field or the rule."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.space import DiscreteSearchSpace

from trieste_scalable.acquisition import (
    BBKB,
    BatchThompsonSampling,
    BatchUCBState,
    ConfidenceWidth,
    MiniGPUCB,
    MiniMetaState,
    ThompsonState,
    rule_state,
)
from trieste_scalable.campaigns.directory.lock import write_atomically
from trieste_scalable.campaigns.directory.records import Job, LoggedEvaluations, jobs_to_resubmit
from trieste_scalable.campaigns.spec.campaign import MIN_NOISE_VARIANCE
from trieste_scalable.cli import main
from trieste_scalable.cluster.connection import check_reachable
from trieste_scalable.errors import CampaignError
from trieste_scalable.evaluation.evaluators import (
    EvaluationTimeout,
    InProcessEvaluator,
    run_objective,
)
from trieste_scalable.models import AdaptiveSVGP, NystromGPR, ReplicatedGPR
from trieste_scalable.models.fitting import NOISE_FLOOR
from trieste_scalable.stores.cache import CACHE_VERSION, cached
from trieste_scalable.stores.featurise import _cached, fingerprint_chunk

from ...util import write_library


@pytest.mark.parametrize("field", ["beta", "rkhs_norm", "noise_std", "delta"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_confidence_widths_refuse_non_finite_and_negative_settings(
    field: str, value: float
) -> None:
    with pytest.raises(ValueError, match=field):
        ConfidenceWidth("constant", **{field: value})


def _data() -> Dataset:
    x = np.random.default_rng(0).uniform(size=(8, 2))
    return Dataset(tf.constant(x), tf.constant(np.sin(3 * x[:, :1])))


@pytest.mark.parametrize("model", [NystromGPR, ReplicatedGPR, AdaptiveSVGP])
@pytest.mark.parametrize("noise", [1e-13, 0.0, math.inf, math.nan, -1.0])
def test_models_refuse_a_noise_variance_below_their_floor_or_not_finite(
    model: type, noise: float
) -> None:
    with pytest.raises(ValueError, match="noise_variance must be finite and above 1e-12"):
        model(gpflow.kernels.SquaredExponential(), noise, _data())
    assert MIN_NOISE_VARIANCE == NOISE_FLOOR  # the command line checks the models' floor


@pytest.mark.parametrize(
    "fields",
    [
        {"information": 0.5, "num_batches": "3"},
        {"information": 0.5, "pending": "abc"},
        {"information": float("nan")},
        {"information": 0.5, "num_batches": True},
        {"information": 0.5, "pending": [[0.1, "x"]]},
        {"information": 0.5, "seen": 1.5},
    ],
)
def test_saved_states_with_ill_typed_fields_are_refused(fields: dict[str, object]) -> None:
    text = json.dumps({"batch": 2, "type": "BatchUCBState", "fields": fields})
    with pytest.raises(ValueError, match=r"not a saved rule state.*BatchUCBState\.\w+ = "):
        rule_state.decode(text)
    good = {"information": 0.5, "num_batches": 3, "pending": [[0.1, 0.2]], "seen": 4}
    state, _ = rule_state.decode(json.dumps({"batch": 2, "type": "BatchUCBState", "fields": good}))
    assert state == BatchUCBState(0.5, 3, 0, pending=((0.1, 0.2),), seen=4)


def test_a_rule_restored_with_another_rules_state_names_both() -> None:
    data = _data()
    space = DiscreteSearchSpace(tf.constant(np.random.default_rng(1).uniform(size=(50, 2))))
    kernel = gpflow.kernels.SquaredExponential()
    bbkb = AskTellOptimizer(space, data, NystromGPR(kernel, 0.1, data), BBKB(seed=0))
    bbkb.ask()
    saved = bbkb.to_state()
    for rule in [MiniGPUCB(), BatchThompsonSampling(4)]:  # over the saved NystromGPR
        restored = AskTellOptimizer.from_state(saved, space, rule)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=f"{type(rule).__name__}.*BatchUCBState"):
            restored.ask()


@pytest.mark.parametrize(
    "pending, message",
    [
        (((0.1, 0.2, 0.3),), "shape"),
        (((0.1, math.nan),), "NaN"),
        (((0.1, 0.2), (0.3,)), "rows of numbers"),
    ],
)
@pytest.mark.parametrize("rule_name", ["bbkb", "mini-ucb", "ts"])
def test_bad_pending_points_in_a_rule_state_are_one_clear_error(
    pending: tuple[tuple[float, ...], ...], message: str, rule_name: str
) -> None:
    data = _data()
    space = DiscreteSearchSpace(tf.constant(np.random.default_rng(1).uniform(size=(50, 2))))
    kernel = gpflow.kernels.SquaredExponential()
    rule, model, state = {
        "bbkb": (BBKB(seed=0), NystromGPR(kernel, 0.1, data), BatchUCBState(0.0)),
        "mini-ucb": (MiniGPUCB(), ReplicatedGPR(kernel, 0.1, data), MiniMetaState()),
        "ts": (BatchThompsonSampling(4), AdaptiveSVGP(kernel, 0.1, data), ThompsonState()),
    }[rule_name]
    if message != "shape":  # not even a state: refused where it is built
        with pytest.raises(TypeError, match=f"{type(state).__name__}.pending = "):
            dataclasses.replace(state, pending=pending, seen=len(data))
        return
    state = dataclasses.replace(state, pending=pending, seen=len(data))
    with pytest.raises(ValueError, match=f"pending points.*{message}"):
        rule.acquire_single(space, model, dataset=data)(state)


def test_a_negative_worker_count_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = tmp_path / "run"
    argv = ["screen", "--workers", "-2", "--asynchronous", "--logdir", str(logdir), "--quiet"]
    assert main(argv) == 2
    assert "--workers must be positive, got -2" in capsys.readouterr().err
    assert not logdir.exists()


def test_huge_objective_values_fail_the_evaluation_not_the_campaign() -> None:
    with pytest.raises(ValueError, match="beyond"):
        run_objective(lambda _: 1e300, "CCO")
    evaluator = InProcessEvaluator(lambda _: -1e300)
    evaluator.submit(np.zeros(2))
    (evaluation,) = evaluator.collect()
    assert evaluation.failed and "beyond" in evaluation.error
    assert run_objective(lambda _: 1e12, "CCO")[0] == 1e12  # large offsets are fine


def test_a_deeply_nested_rule_state_is_a_clear_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"batch": 1, "type": "ThompsonState", "fields": {"pending": ' + deep + "}}"
    with pytest.raises(ValueError, match="not a saved rule state"):
        rule_state.decode(text)


def test_in_flight_jobs_are_checked_against_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A resumed campaign resubmits a listed job only if its candidate is in the library, not
    logged already and not listed twice."""
    records = LoggedEvaluations(
        jobs=np.array([0, 1, 2]),
        batches=np.array([0, 0, 1]),
        ids=np.array([10, 11, 12]),
        observed=np.array([1.0, np.nan, 2.0]),
    )
    path = tmp_path / "in_flight.json"
    listed = [Job(2, 1, 12), Job(3, 1, 11), Job(4, 1, 13), Job(5, 1, 13), Job(6, 1, 14)]
    still = jobs_to_resubmit(listed, records, 20, path)
    assert still == [Job(4, 1, 13), Job(6, 1, 14)]  # 11 failed and 12 succeeded: both logged
    assert "2 listed candidates are logged already or listed twice" in capsys.readouterr().out
    with pytest.raises(CampaignError, match="names candidate 99999, outside the library's 0..19"):
        jobs_to_resubmit([Job(7, 1, 99999)], records, 20, path)


def test_a_worker_campaign_failing_before_its_first_result_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """E.g. Ray failing to start: the corrected rerun must not be refused."""

    def ray_fails(*args: object, **kwargs: object) -> None:
        raise RuntimeError("Ray could not start its cluster")

    monkeypatch.setattr("trieste_scalable.cluster.evaluators.RayEvaluator", ray_fails)
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))
    library = tmp_path / "library.smi"
    write_library(library, 30)
    logdir = tmp_path / "run"
    argv = ["screen", "--library", str(library), "--workers", "2", "--initial", "5"]
    argv += ["--budget", "5", "--logdir", str(logdir), "--quiet"]
    assert main(argv) == 1
    assert "Ray could not start its cluster" in capsys.readouterr().err
    left = {p.name for p in logdir.iterdir()}
    assert not left & {"run.json", "evaluations.csv", "in_flight.json", "rule_state.json"}, left


def test_an_unreachable_ray_address_fails_fast_with_its_name() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConnectionError, match=f"cannot reach a Ray cluster at 127.0.0.1:{port}"):
        check_reachable(f"127.0.0.1:{port}", seconds=5)
    with pytest.raises(ConnectionError, match="ray://127.0.0.1"):
        check_reachable(f"ray://127.0.0.1:{port}", seconds=5)
    check_reachable("auto")  # left to Ray


def test_a_directory_in_a_cache_entrys_place_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))
    value = cached("scores", "a key", lambda: np.arange(3.0))
    (entry,) = (tmp_path / "cache").glob("scores-*.npy")
    entry.unlink()
    entry.mkdir()  # e.g. a path made by hand
    again = cached("scores", "a key", lambda: np.arange(3.0))
    np.testing.assert_array_equal(again, value)
    assert "is not a file" in capsys.readouterr().err
    assert entry.is_dir() and not list((tmp_path / "cache").glob("*.tmp.*"))


def test_temporaries_of_killed_writers_are_removed_and_others_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))
    cached("scores", "a key", lambda: np.arange(3.0))
    (entry,) = (tmp_path / "cache").glob("scores-*.npy")
    host = socket.gethostname().replace(".", "-")
    running = subprocess.Popen(["sleep", "60"])  # a writer still at work
    try:
        stale, live, foreign = (
            entry.with_suffix(f".{name}.tmp.npy")
            for name in (f"{host}.{_ended_pid()}", f"{host}.{running.pid}", f"other.{_ended_pid()}")
        )
        for temporary in (stale, live, foreign):
            temporary.write_bytes(b"half written")
        entry.unlink()  # the next call writes the entry again
        np.testing.assert_array_equal(cached("scores", "a key", lambda: np.arange(3.0)), [0, 1, 2])
        assert not stale.exists() and live.exists() and foreign.exists()
    finally:
        running.kill()
        running.wait()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(
        [entry.name, entry.with_suffix(".sha256").name, live.name, foreign.name]
    )


def _ended_pid() -> int:
    """The pid of a process that has ended (free, unless reused since)."""
    with subprocess.Popen(["true"]) as ended:
        pass
    return ended.pid


def test_an_objective_running_past_its_time_limit_is_stopped_where_it_runs() -> None:
    start = time.perf_counter()
    with pytest.raises(EvaluationTimeout, match="timed out after 0.2 s of running"):
        run_objective(lambda _: time.sleep(30), "CCO", timeout=0.2)
    assert time.perf_counter() - start < 20  # stopped, not slept out
    assert run_objective(lambda _: 1.5, "CCO", timeout=5.0)[0] == 1.5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no timer left behind


def test_a_foreign_cache_entry_copied_into_place_is_recomputed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRIESTE_SCALABLE_CACHE", str(tmp_path / "cache"))
    ours = cached("scores", "library A", lambda: np.arange(3.0))
    cached("scores", "library B", lambda: np.arange(3.0) + 10)
    entry_a, entry_b = (
        next((tmp_path / "cache").glob(f"scores-{_key_hash(k)}.npy"))
        for k in ("library A", "library B")
    )
    shutil.copy(entry_b, entry_a)  # same shape, another library's values
    again = cached("scores", "library A", lambda: np.arange(3.0))
    np.testing.assert_array_equal(again, ours)
    assert "is not what was written under this key" in capsys.readouterr().err
    shutil.copy(entry_b.with_suffix(".sha256"), entry_a.with_suffix(".sha256"))
    shutil.copy(entry_b, entry_a)  # the sidecar too: it names the other key
    np.testing.assert_array_equal(cached("scores", "library A", lambda: np.arange(3.0)), ours)
    np.testing.assert_array_equal(cached("scores", "library A", _never), ours)  # now a hit


def _never() -> np.ndarray:
    raise AssertionError("a sound cache entry was recomputed")


def _key_hash(key: str) -> str:
    return hashlib.sha256(f"{CACHE_VERSION}|{key}".encode()).hexdigest()[:20]


def test_a_foreign_chunk_cache_entry_is_recomputed(tmp_path: Path) -> None:
    first = _cached(fingerprint_chunk, tmp_path, ["CCO", "c1ccccc1"], ("bits", 2, 64))
    other = _cached(fingerprint_chunk, tmp_path, ["CCN", "CCCl"], ("bits", 2, 64))
    entries = sorted(tmp_path.glob("*.npz"), key=lambda p: p.stat().st_mtime_ns)
    shutil.copy(entries[1], entries[0])  # the second chunk's result in the first's place
    again = _cached(fingerprint_chunk, tmp_path, ["CCO", "c1ccccc1"], ("bits", 2, 64))
    assert not np.array_equal(first[1], other[1])
    np.testing.assert_array_equal(again[1], first[1])


def test_a_campaign_file_s_temporary_left_by_a_killed_writer_is_removed(tmp_path: Path) -> None:
    host = socket.gethostname().replace(".", "-")
    journal = tmp_path / "in_flight.json"
    stale = tmp_path / f"in_flight.{host}.{_ended_pid()}.tmp.json"
    stale.write_text('{"next_job": ')  # a writer killed mid-write
    write_atomically(journal, '{"next_job": 3, "in_flight": []}')
    assert journal.read_text() == '{"next_job": 3, "in_flight": []}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in_flight.json"]
