"""The command line: runs end to end, resumes without re-evaluating, and fails cleanly."""

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from trieste_scalable.acquisition import rule_state
from trieste_scalable.acquisition.thompson import ThompsonState
from trieste_scalable.campaigns.algorithms import builders as algorithms
from trieste_scalable.campaigns.spec.defaults import resolved
from trieste_scalable.cli import main
from trieste_scalable.cli.arguments import parser, spec_of

from ...util import write_library


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "library.smi"
    write_library(path, 400)
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_optimize_runs_and_writes_its_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(["optimize", "--budget", "30", "--logdir", str(tmp_path / "run"), "--quiet"])
    assert code == 0
    lines = (tmp_path / "run" / "evaluations.csv").read_text().splitlines()
    assert (
        lines[0] == "batch,index,x0,x1,x2,observed,true,job,submitted,started,finished,worker,error"
    )
    assert len(lines) == 1 + 10 + 30  # header, initial design, budget
    assert (tmp_path / "run" / "summary.png").stat().st_size > 0
    assert any(p.name.startswith("events.out.tfevents") for p in (tmp_path / "run").iterdir())
    assert "cumulative regret / uniform random" in capsys.readouterr().out


def test_screen_resumes_without_re_evaluating(
    tmp_path: Path, library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logdir = tmp_path / "screen"
    args = [
        "screen",
        "--library",
        str(library),
        "--algorithm",
        "ts",
        "--initial",
        "20",
        "--batch-size",
        "20",
        "--logdir",
        str(logdir),
        "--quiet",
    ]
    assert main(args + ["--budget", "40"]) == 0
    first = _rows(logdir / "evaluations.csv")
    assert len(first) == 60 and first[0].keys() >= {"batch", "index", "smiles", "observed"}
    assert main(args + ["--budget", "80", "--resume"]) == 0
    rows = _rows(logdir / "evaluations.csv")
    assert rows[:60] == first  # nothing rewritten
    assert len(rows) == 100
    assert len({row["index"] for row in rows}) == 100  # no molecule evaluated twice
    assert [row["batch"] for row in rows[60:]] == ["3"] * 20 + ["4"] * 20
    # the rule continued from its saved state: batch TS drew batches 3 and 4's seeds, not
    # batches 1 and 2's again (a fresh rule would end at num_batches == 2)
    state, batch = rule_state.decode((logdir / "rule_state.json").read_text())
    assert batch == 4 and isinstance(state, ThompsonState) and state.num_batches == 4
    assert main(args + ["--budget", "80", "--resume"]) == 0  # already complete: no-op
    assert len(_rows(logdir / "evaluations.csv")) == 100
    # --inducing reaches the model; campaigns logged before the flag existed still resume
    built = _record_builds(monkeypatch, lambda model, rule: model.num_inducing)
    inducing = tmp_path / "inducing"
    with_inducing = [a if a != str(logdir) else str(inducing) for a in args] + ["--inducing"]
    assert main(with_inducing + ["7", "--budget", "20"]) == 0
    assert built == [7]
    assert main(with_inducing + ["8", "--budget", "40", "--resume"]) == 2  # changed setting
    saved = json.loads((logdir / "run.json").read_text())
    del saved["inducing"], saved["ratio_threshold"]  # as logged before these flags
    (logdir / "run.json").write_text(json.dumps(saved))
    assert main(args + ["--budget", "100", "--resume"]) == 0
    assert len(_rows(logdir / "evaluations.csv")) == 120


def test_screen_error_paths(tmp_path: Path, library: Path, capsys: pytest.CaptureFixture) -> None:
    logdir = tmp_path / "screen"
    base = ["screen", "--library", str(library), "--logdir", str(logdir), "--quiet"]
    assert main(base + ["--budget", "1000"]) == 2
    assert "exceeds the 400 candidates" in capsys.readouterr().err
    bad = tmp_path / "bad.smi"
    bad.write_text("CCO\nnot_a_molecule\n")
    assert main(["screen", "--library", str(bad), "--logdir", str(logdir)]) == 2
    assert "--skip-invalid" in capsys.readouterr().err
    (tmp_path / "empty.smi").write_text("")
    assert main(["screen", "--library", str(tmp_path / "empty.smi")]) == 2
    assert "no molecules" in capsys.readouterr().err
    assert main(base + ["--budget", "20", "--batch-size", "20", "--initial", "20"]) == 0
    before = (logdir / "evaluations.csv").read_text()
    assert main(base + ["--budget", "20"]) == 2  # would overwrite the campaign
    assert "--resume" in capsys.readouterr().err
    changed = base + ["--budget", "40", "--objective", "qed", "--resume"]
    assert main(changed) == 2
    assert "objective" in capsys.readouterr().err
    assert (logdir / "evaluations.csv").read_text() == before  # nothing lost
    assert (
        main(["screen", "--library", str(library), "--logdir", str(tmp_path / "x"), "--resume"])
        == 2
    )
    with pytest.raises(SystemExit):
        main(["screen", "--algorithm", "nope"])


def test_bad_arguments_give_a_message_and_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["optimize", "--budget", "0", "--logdir", str(tmp_path)]) == 2
    assert "must be positive" in capsys.readouterr().err
    for flag in ("--exploration-rate", "--variance-optimism"):
        assert main(["optimize", flag, "-1", "--logdir", str(tmp_path)]) == 2
        assert f"{flag} must be at least 0" in capsys.readouterr().err
    for algorithm, threshold, bound in (("bbkb", "0.5", "at least 1"), ("mini-ei", "1", "above 1")):
        command = ["optimize", "--algorithm", algorithm, "--ratio-threshold", threshold]
        assert main(command + ["--logdir", str(tmp_path)]) == 2
        assert f"--ratio-threshold must be {bound}" in capsys.readouterr().err
    for algorithm, value, message in (
        ("bbkb", "0", "--regulariser must be positive"),
        ("bkb", "nan", "--regulariser must be positive"),
        ("ts", "1", "--regulariser applies to bbkb, bbkb-local, bkb, gp-bucb, not ts"),
        ("mini-ucb", "1", "not mini-ucb"),
    ):
        command = ["optimize", "--algorithm", algorithm, "--regulariser", value]
        assert main(command + ["--logdir", str(tmp_path)]) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["optimize", "--algorithm", "nope"])


def test_regulariser_reaches_the_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    regularisers = _record_builds(monkeypatch, lambda model, rule: rule._regulariser)
    command = ["optimize", "--algorithm", "gp-bucb", "--budget", "5", "--quiet"]
    assert main(command + ["--logdir", str(tmp_path / "a"), "--regulariser", "0.25"]) == 0
    assert main(command + ["--logdir", str(tmp_path / "b")]) == 0
    assert regularisers == [0.25, "kernel_variance"]


def test_ratio_threshold_reaches_the_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    thresholds = _record_builds(monkeypatch, lambda model, rule: rule._stopping.ratio_threshold)
    command = ["optimize", "--algorithm", "bbkb", "--budget", "5", "--quiet"]
    assert main(command + ["--logdir", str(tmp_path / "a"), "--ratio-threshold", "7.5"]) == 0
    assert main(command + ["--logdir", str(tmp_path / "b")]) == 0
    assert thresholds == [7.5, 2.0]


def _record_builds(monkeypatch: pytest.MonkeyPatch, read: Any) -> list:  # type: ignore[type-arg]
    """What ``read(model, rule)`` gives of every (model, rule) the campaigns build from now on."""
    seen = []
    campaign_build = algorithms.build

    def spy(*args: Any, **kwargs: Any) -> Any:
        model, rule = campaign_build(*args, **kwargs)
        seen.append(read(model, rule))
        return model, rule

    monkeypatch.setattr(algorithms, "build", spy)
    return seen


def _resolved(*argv: str) -> Any:
    return resolved(spec_of(parser().parse_args(list(argv))))


def test_asynchronous_campaigns_let_adaptive_batches_refill_proposals_in_hand() -> None:
    def parsed(*extra: str) -> Any:
        return _resolved("screen", "--batch-size", "3", *extra).batch_cap()

    assert parsed() == 3
    assert parsed("--workers", "4") == 3  # whole batches
    assert parsed("--workers", "4", "--asynchronous") == 8  # twice the workers
    assert parsed("--workers", "5", "--asynchronous") == 10
    assert parsed("--workers", "4", "--asynchronous", "--max-batch-size", "2") == 2


def test_asynchronous_campaigns_propose_several_points_a_worker_at_once_by_default() -> None:
    def filled(*extra: str) -> int:
        return _resolved("screen", *extra).batch

    assert filled() == 100  # screen's own default
    assert filled("--workers", "4") == 100  # whole batches
    assert filled("--workers", "4", "--asynchronous") == 16  # gp-bucb's fixed batches: 4N
    assert filled("--workers", "4", "--asynchronous", "--algorithm", "ts") == 8
    assert filled("--workers", "4", "--asynchronous", "--batch-size", "3") == 3


def test_version_is_the_package_version(capsys: pytest.CaptureFixture) -> None:
    import trieste_scalable

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"trieste-scalable {trieste_scalable.__version__}"


@pytest.mark.parametrize("content", ["{not json", '{"batch": 1, "type": "NoSuchState"}'])
def test_resume_with_a_damaged_rule_state_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str
) -> None:
    logdir = tmp_path / "run"
    args = ["optimize", "--algorithm", "random", "--logdir", str(logdir), "--quiet"]
    assert main(args + ["--budget", "20"]) == 0
    before = (logdir / "evaluations.csv").read_text()
    (logdir / "rule_state.json").write_text(content)
    assert main(args + ["--budget", "30", "--resume"]) == 1
    assert "rule_state.json is damaged" in capsys.readouterr().err
    assert (logdir / "evaluations.csv").read_text() == before  # nothing lost or added


def test_debug_prints_the_traceback_before_the_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["propose", "--logdir", str(tmp_path / "lab"), "--library", str(tmp_path / "none.smi")]
    assert main(argv) == 2
    plain = capsys.readouterr().err
    assert "Traceback" not in plain and plain.startswith("trieste-scalable: error:")
    assert main(["--debug", *argv]) == 2
    debug = capsys.readouterr().err
    assert debug.startswith("Traceback") and debug.rstrip().endswith(plain.rstrip())
    monkeypatch.setenv("TRIESTE_SCALABLE_DEBUG", "1")
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("Traceback")
