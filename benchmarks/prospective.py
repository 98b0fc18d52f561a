"""A prospective campaign on Enamine10k, the lab played by the shipped thymidylate kinase (4UNN)
docking table: MolPAL's protocol (106 molecules at random, then five batches of 106), each
round ``trieste-scalable propose`` then ``trieste-scalable tell``, run as commands (the time a
chemist waits, Python and TensorFlow's start included). The molecules the table does not score
are told with an empty score (failed evaluations).

Printed: seconds of each ``propose`` and ``tell`` command (warm cache: the library is featurised
once before), of which starting Python and importing the package (TensorFlow, GPflow, Trieste)
take a fixed share, measured alone; the same rounds from Python with one
:class:`~trieste_scalable.campaigns.prospective.ProspectiveCampaign` (a notebook: after its first
call, imports done and its optimizer kept); the same campaign's ``screen`` with the table as its
oracle (its seconds a batch, measured in the same run); and whether all three picked the same
molecules.

    python benchmarks/prospective.py [--seed 0] [--rounds 6]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trieste_scalable.campaigns.prospective.campaign import ProspectiveCampaign
from trieste_scalable.campaigns.screen import screen
from trieste_scalable.chemistry.molecules import ENAMINE_10K

PROTOCOL = dict(library="enamine-10k", initial=106, batch_size=106, budget=530)


def table() -> dict[str, str]:
    """The shipped table's score text of each SMILES as written (the library's spelling)."""
    with gzip.open(ENAMINE_10K / "4unn_scores.csv.gz", "rt") as handle:
        return {s: v for s, v in csv.reader(handle) if s != "smiles"}


def command(*args: str) -> tuple[float, str]:
    """Seconds and stdout of ``trieste-scalable ARGS`` (it must succeed)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "trieste_scalable", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    if done.returncode:
        raise RuntimeError(done.stderr)
    return time.perf_counter() - start, done.stdout


def fill(path: Path, scores: dict[str, str]) -> None:
    """Fill in a proposed batch's scores from the table, as the lab would."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["score"] = scores.get(row["smiles"], "")
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def picks(logdir: Path) -> list[tuple[str, str]]:
    with open(logdir / "evaluations.csv", newline="") as handle:
        return [(r["batch"], r["smiles"]) for r in csv.DictReader(handle)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=6)
    options = parser.parse_args()
    scores = table()
    settings = {**PROTOCOL, "seed": options.seed}
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in settings.items()]
    with tempfile.TemporaryDirectory() as root:
        with contextlib.redirect_stdout(io.StringIO()):  # warm the caches: not timed
            screen(library="enamine-10k", objective="table:enamine-10k-4unn", initial=2,
                   budget=1, algorithm="random", logdir=f"{root}/warm", quiet=True)  # fmt: skip
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            done = screen(**settings, objective="table:enamine-10k-4unn", lower_is_better=True,
                          logdir=f"{root}/screen", quiet=True)  # fmt: skip
        screen_seconds = time.perf_counter() - start
        per_batch = screen_seconds / (len(done.campaign.acquisitions) + 1)
        lab = Path(root) / "lab"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import trieste_scalable.campaigns.prospective"],
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, check=True)  # fmt: skip
        imports = time.perf_counter() - start
        print(f"{'round':>5s} {'propose s':>10s} {'tell s':>8s} {'in Python s':>12s} "
              f"{'/ screen batch':>15s}")  # fmt: skip
        notebook = ProspectiveCampaign.start(**settings, lower_is_better=True, quiet=True,
                                             logdir=str(Path(root) / "notebook"))  # fmt: skip
        commands, in_python = [], []
        for round in range(options.rounds):
            extra = flags if round == 0 else []  # later rounds: the directory's own settings
            seconds, out = command("propose", f"--logdir={lab}", "--lower-is-better", "--quiet",
                                   *extra)  # fmt: skip
            path = Path(out.strip().splitlines()[-1])
            fill(path, scores)
            told, _ = command("tell", str(lab), str(path))
            start = time.perf_counter()
            batch = notebook.propose()
            python = time.perf_counter() - start
            fill(batch.path, scores)
            with contextlib.redirect_stdout(io.StringIO()):
                notebook.tell(batch.path)
            commands.append(seconds)
            in_python.append(python)
            print(f"{round:5d} {seconds:10.2f} {told:8.2f} {python:12.2f} "
                  f"{python / per_batch:15.2f}", flush=True)  # fmt: skip
        same = picks(Path(root) / "screen") == picks(lab) == picks(Path(root) / "notebook")
        print(
            f"screen: {screen_seconds:.1f} s for the campaign, {per_batch:.2f} s a batch; "
            f"starting Python and importing the package: {imports:.1f} s; after the first call "
            f"propose took {min(commands[1:]):.1f}-{max(commands[1:]):.1f} s as a command, "
            f"{min(in_python[1:]):.1f}-{max(in_python[1:]):.1f} s from Python; same picks as "
            f"screen: {same}"
        )


if __name__ == "__main__":
    main()
