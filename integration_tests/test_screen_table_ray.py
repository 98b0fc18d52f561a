"""A chemist's score table on Ray workers: with a fifth of the library unscored and results
arriving in a random order (simulated latency), whole-batch campaigns pick exactly what the same
campaign picks in this process, and no rule stalls on its failures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray")
pytest.importorskip("rdkit")


from tests.util import moses  # noqa: E402

from .campaign_log import logged_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("rule", [["--algorithm", "gp-bucb"], ["--algorithm", "bbkb"]])
def test_ray_workers_pick_what_this_process_picks(tmp_path: Path, rule: list[str]) -> None:
    library = moses(150)
    (tmp_path / "library.smi").write_text("\n".join(library) + "\n")
    rng = np.random.default_rng(11)
    rows = [f"{s},{rng.normal(-7, 1):.1f}" for i, s in enumerate(library) if i % 5 != 1]
    (tmp_path / "dock.csv").write_text("smiles,score\n" + "\n".join(rows) + "\n")
    env = dict(os.environ, TRIESTE_SCALABLE_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    base = [sys.executable, "-m", "trieste_scalable", "screen", "--library", "library.smi"]
    base += ["--objective", "table:dock.csv", "--lower-is-better", "--initial", "10"]
    base += ["--budget", "20", "--batch-size", "5", "--quiet", "--seed", "3", *rule]
    runs = {
        "here": [],
        "ray": ["--workers", "3", "--latency", "0.05"],  # 5 a batch on 3 workers, any order
    }
    for name, extra in runs.items():
        command = [*base, "--logdir", name, *extra]
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
    here, ray = logged_rows(tmp_path / "here"), logged_rows(tmp_path / "ray")
    assert len(here) == len(ray) == 30
    by_batch = [
        sorted((int(r["batch"]), r["smiles"], r["score"], bool(r["error"])) for r in rows)
        for rows in (here, ray)
    ]
    assert by_batch[0] == by_batch[1]  # the same molecules, batches, scores and failures
    assert any(r["error"] for r in ray) and len({r["smiles"] for r in ray}) == 30
