"""The command line: a short run end to end and its error path."""

from pathlib import Path

import pytest

from trieste_scalable.cli import main


def test_optimize_runs_and_writes_its_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(["optimize", "--budget", "30", "--logdir", str(tmp_path), "--quiet"])
    assert code == 0
    lines = (tmp_path / "evaluations.csv").read_text().splitlines()
    assert lines[0].startswith("batch,x0,x1,x2,observed,true")
    assert len(lines) == 1 + 10 + 30  # header, initial design, budget
    assert (tmp_path / "summary.png").stat().st_size > 0
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())
    assert "cumulative regret / uniform random" in capsys.readouterr().out


def test_bad_arguments_give_a_message_and_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["optimize", "--budget", "0", "--logdir", str(tmp_path)]) == 2
    assert "must be positive" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["optimize", "--algorithm", "nope"])
