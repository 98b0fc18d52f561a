"""A short screening campaign end to end through the installed command (a subprocess)."""

import csv
import os
import subprocess
import sys
from pathlib import Path

from tests.util import write_library  # noqa: E402


def test_screen_command_end_to_end(tmp_path: Path) -> None:
    library = tmp_path / "library.smi"
    write_library(library, 600)
    logdir = tmp_path / "run"
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"))
    command = [
        sys.executable,
        "-m",
        "trieste_scalable",
        "screen",
        "--library",
        str(library),
        "--initial",
        "30",
        "--budget",
        "90",
        "--batch-size",
        "30",
        "--logdir",
        str(logdir),
        "--quiet",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "recall of the library's top 1%" in done.stdout
    with open(logdir / "evaluations.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 120 and len({row["smiles"] for row in rows}) == 120
    assert {row["batch"] for row in rows} == {"0", "1", "2", "3"}
    assert (logdir / "summary.png").stat().st_size > 0
    assert any(p.name.startswith("events.out.tfevents") for p in logdir.iterdir())
