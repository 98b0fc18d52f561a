"""What every campaign writes and reads (the timed evaluation log, the journal of jobs in
flight), the oracles behind ``--objective``, and the command line's checks of worker settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trieste_scalable.campaigns.directory.records import EvaluationLog, InFlight, Job
from trieste_scalable.campaigns.spec.defaults import resolved
from trieste_scalable.campaigns.spec.library import ScreenSpec
from trieste_scalable.chemistry.molecules import celecoxib_mpo, parse
from trieste_scalable.cli import main
from trieste_scalable.cluster.evaluators import WithLatency
from trieste_scalable.errors import CampaignError
from trieste_scalable.evaluation.evaluators import Evaluation, driver_times, run_objective
from trieste_scalable.evaluation.oracles import PythonOracle, is_table_objective, oracle_for
from trieste_scalable.problems.screening import screening_problem
from trieste_scalable.stores.store_build import build_store

from ...util import moses, write_library


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "library.smi"
    write_library(path, 50)
    return path


def _evaluation(key: int, value: float | None, error: str = "") -> Evaluation:
    return Evaluation(key, np.zeros(3), value, error, 10.0 + key, 12.5 + key, "host:1", 9.0)


def test_the_log_round_trips_values_failures_and_timings(library: Path) -> None:
    problem = screening_problem(str(library), None)
    assert np.all(np.isnan(problem.values))  # an oracle's values: unknown up front
    log = EvaluationLog(library.parent / "evaluations.csv", problem, score=lambda i, y: -y)
    log.start()
    jobs = [Job(0, 0, 3), Job(1, 0, 7), Job(2, 1, 11)]
    evaluations = [_evaluation(0, -0.1 / 3), _evaluation(1, None, "RuntimeError: no pose")]
    log.append(jobs[:2], evaluations)
    log.append(jobs[2:], [_evaluation(2, -0.25)])
    records = log.read()
    np.testing.assert_array_equal(records.jobs, [0, 1, 2])
    np.testing.assert_array_equal(records.batches, [0, 0, 1])
    np.testing.assert_array_equal(records.ids, [3, 7, 11])
    np.testing.assert_array_equal(records.failed, [False, True, False])
    assert records.observed[0] == -0.1 / 3  # exactly, as written
    text = log.path.read_text().splitlines()
    assert text[0].endswith("observed,score,job,submitted,started,finished,worker,error")
    assert text[1].split(",")[4:10] == ["0.0333333", "0", "9.000", "10.000", "12.500", "host:1"]
    assert text[2].endswith(",,,1,9.000,11.000,13.500,host:1,RuntimeError: no pose")
    assert problem.labels[7] in text[2]

    with open(log.path, "a") as handle:  # a crash in the middle of a write
        handle.write("2,5,CC")
    assert len(log.read().jobs) == 3 and "2,5,CC" in log.dropped_partial_line
    with open(log.path, "a") as handle:
        handle.write(f"3,4,{problem.labels[4]},-0.5,0.5,7,1,1,1,host:1,it failed\n")
    with pytest.raises(CampaignError, match="a value or an error, not both"):
        log.read()


def test_the_log_reads_non_finite_logged_values_as_failures(library: Path) -> None:
    """Logs written before workers failed non-finite values hold NaN or inf as values: they
    resume, with those evaluations failed (never data); a row with neither is refused."""
    problem = screening_problem(str(library), None)
    log = EvaluationLog(library.parent / "evaluations.csv", problem)
    log.start()
    log.append([Job(0, 0, 3)], [_evaluation(0, 0.5)])
    with open(log.path, "a") as handle:
        for job, value in ((1, "nan"), (2, "inf"), (3, "-inf")):
            handle.write(
                f"0,{job + 3},{problem.labels[job + 3]},{value},{value},{job},1,1,1,h:1,\n"
            )
    records = log.read()
    np.testing.assert_array_equal(records.failed, [False, True, True, True])
    assert records.observed[0] == 0.5
    with open(log.path, "a") as handle:
        handle.write(f"0,9,{problem.labels[9]},,,4,1,1,1,h:1,\n")
    with pytest.raises(CampaignError, match="a value or an error, found neither"):
        log.read()


def test_a_repeated_log_row_is_read_once(library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A last row written twice (e.g. copied by hand) would be told twice on --resume."""
    problem = screening_problem(str(library), None)
    log = EvaluationLog(library.parent / "evaluations.csv", problem)
    log.start()
    log.append([Job(0, 0, 3), Job(1, 0, 7)], [_evaluation(0, 0.5), _evaluation(1, 0.25)])
    last = log.path.read_text().splitlines()[-1]
    with open(log.path, "a") as handle:
        handle.write(last + "\n")
    records = log.read()
    np.testing.assert_array_equal(records.jobs, [0, 1])
    np.testing.assert_array_equal(records.ids, [3, 7])
    np.testing.assert_array_equal(records.observed, [0.5, 0.25])
    assert "line 4 repeats job 1" in capsys.readouterr().out


def test_the_log_refuses_another_library(library: Path, tmp_path: Path) -> None:
    problem = screening_problem(str(library), None)
    log = EvaluationLog(tmp_path / "evaluations.csv", problem)
    log.start()
    log.append([Job(0, 0, 3)], [_evaluation(0, 1.0)])
    other = tmp_path / "other.smi"
    write_library(other, 100, start=50)
    moved = EvaluationLog(log.path, screening_problem(str(other), None))
    with pytest.raises(CampaignError, match="the library changed"):
        moved.read()


def test_in_flight_journal(tmp_path: Path) -> None:
    journal = InFlight(tmp_path / "in_flight.json")
    assert journal.read() == ([], 0)
    journal.write([Job(4, 2, 17), Job(5, 3, 1)], 6)
    assert journal.read() == ([Job(4, 2, 17), Job(5, 3, 1)], 6)
    journal.path.write_text('{"next_job": 6, "in_flight": [[4, 2]]}')
    with pytest.raises(CampaignError, match="damaged"):
        journal.read()


def test_oracles_behind_the_objective_option() -> None:
    smiles = moses(3)
    property_oracle = oracle_for("celecoxib-mpo")
    table = celecoxib_mpo(parse(smiles)[0])
    np.testing.assert_allclose([property_oracle(s) for s in smiles], -table)  # minimised
    assert property_oracle.score(property_oracle(smiles[0])) == pytest.approx(table[0])
    assert oracle_for("qed", lower_is_better=True)("CCO") > 0
    user = oracle_for("python:integration_tests.objectives:length_or_fail")
    assert user.oracle == PythonOracle("integration_tests.objectives", "length_or_fail")
    assert user("CCO") == pytest.approx(-0.03)
    with pytest.raises(RuntimeError, match="no pose"):
        user("CCCl")
    with pytest.raises(ValueError, match="cannot load objective"):
        oracle_for("python:integration_tests.objectives:missing")
    with pytest.raises(ValueError, match="python:module:function"):
        oracle_for("python:nomodule")
    with pytest.raises(ValueError, match="unknown objective"):
        is_table_objective("vina")
    with pytest.raises(ValueError, match="unparseable|could not be parsed"):
        property_oracle("not_a_molecule")


@pytest.mark.parametrize("returned", [float("nan"), float("inf"), -float("inf"), None, "abc"])
def test_a_worker_fails_an_evaluation_whose_value_is_not_a_finite_number(returned: object) -> None:
    """What runs on a worker raises (so the evaluation is logged as failed, with the reason, and
    never told to the model) for NaN, infinities and non-numbers; a finite value passes."""
    with pytest.raises((ValueError, TypeError), match="not a finite number|float|convert"):
        run_objective(lambda _: returned, "CCO")
    value, seconds, worker = run_objective(lambda _: -1.5, "CCO")
    assert value == -1.5 and seconds >= 0.0 and worker


def test_a_failed_value_is_named_as_the_objective_returned_it() -> None:
    """Higher is better: the oracle's +inf is what the error says, not the -inf Trieste would
    have been told."""
    from trieste_scalable.evaluation.oracles import Oriented

    with pytest.raises(ValueError, match=r"returned inf, not a finite number"):
        run_objective(Oriented(lambda _: float("inf"), higher_is_better=True), "CCO")
    with pytest.raises(ValueError, match=r"returned 1e\+200, beyond"):
        run_objective(Oriented(lambda _: 1e200, higher_is_better=True), "CCO")
    assert run_objective(Oriented(lambda _: 0.5, higher_is_better=True), "CCO")[0] == -0.5


@pytest.mark.parametrize(
    "submitted, received, seconds, expected",
    [
        (100.0, 110.0, 4.0, (106.0, 110.0)),  # queued 6 s, ran 4 s
        (100.0, 103.0, 4.5, (100.0, 103.0)),  # the worker's clock ran a little fast
        (100.0, 99.9, 0.0, (100.0, 100.0)),  # the driver's clock stepped back
        (100.0, 101.0, -0.1, (101.0, 101.0)),
    ],
)
def test_times_of_an_evaluation_are_the_drivers_and_never_contradict_each_other(
    submitted: float, received: float, seconds: float, expected: tuple[float, float]
) -> None:
    started, finished = driver_times(submitted, received, seconds)
    assert (started, finished) == pytest.approx(expected)
    assert submitted <= started <= finished


def test_latency_wrapper_takes_a_smiles_payload() -> None:
    slow = WithLatency(len, mean=0.01, sigma=0.5, seed=3)
    assert slow("CCO") == 3


def test_scoring_actors_alone_may_join_a_cluster(library: Path, tmp_path: Path) -> None:
    """``--ray-address`` serves the scoring actors too, without evaluation workers."""
    store = build_store([library], tmp_path / "store")
    spec = ScreenSpec(library=str(store.path), scoring_actors=2, ray_address="head:6379")
    assert resolved(spec).algorithm == "gp-bucb"  # accepted, and the actors' default rule


def test_worker_settings_are_checked_before_anything_runs(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    base = ["screen", "--library", str(library), "--logdir", str(tmp_path / "run"), "--quiet"]
    cases = {
        ("--objective", "python:m:f"): "cannot load objective",  # in this process: loaded first
        ("--objective", "vina"): "unknown objective",
        ("--asynchronous",): "--asynchronous needs --workers",
        ("--latency", "1"): "--latency needs --workers",
        ("--ray-address", "h:1"): "--ray-address needs --workers or --scoring-actors",
        ("--workers", "0"): "--workers must be positive",
        ("--workers", "2", "--noise", "0.1"): "not with --workers",
        ("--workers", "2", "--objective", "python:os:nothing_here"): "cannot load objective",
    }
    for extra, message in cases.items():
        assert main(base + list(extra)) == 2, extra
        assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing written
