"""Peak memory and seconds a batch of a real make-on-demand campaign as it grows (issue 81): runs
``trieste-scalable screen`` over Walters' quinazoline space with his full reagent lists (2.19 x
10^10 products, shipped) by QED, as a user runs it, and prints at each of ``--at`` evaluations the
campaign process's peak resident memory, alone and with its product workers, the seconds a batch
took and the best-100 mean found so far.

The peaks are the kernel's, not samples: every ``--interval`` seconds this reads each process's
``VmHWM`` (its peak since the last read) and restarts it (``/proc/PID/clear_refs``), so a peak
between two reads is counted however short it is. An ask's temporaries come and go several times a
second (about 0.3 GiB above the level between them on the quinazoline space), so resident memory
sampled every 20 s missed up to 0.16 GiB of the peak. Where ``clear_refs`` cannot be written the
peaks are sampled resident memory instead, and the table says so.

Seconds a batch: from one batch's submission to the next's, in the campaign's
``evaluations.csv`` (the ask, QED's scoring, the tell and the logs), the median over the batches
within ``--window`` evaluations of each mark. The peak "up to" a mark is over the whole campaign
until then (issue 81's peak at 10,000 and at 100,000); the one "near" it is over that window.

    python benchmarks/campaign_memory.py --budget 100000 --at 10000 30000 100000
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import make_on_demand

SPACE = "quinazoline"
"""Walters' full space, as ``make_on_demand.py`` builds it."""


@dataclass
class Sample:
    """One read: the evaluations told by then, and the peaks (KiB) since the last read."""

    seconds: float
    evaluations: int
    peak: int
    resident: int
    workers: int


def screen_command(args: argparse.Namespace, logdir: Path) -> list[str]:
    reagents = [str(path) for path in make_on_demand.reagent_files(SPACE)]
    return [
        sys.executable, "-m", "trieste_scalable", "screen",
        "--reaction", make_on_demand.SPACES[SPACE][0], "--reagents", *reagents,
        "--objective", args.objective, "--budget", str(args.budget), "--seed", str(args.seed),
        "--quiet", "--logdir", str(logdir),
    ]  # fmt: skip


def status_kib(pid: int, field: str) -> int:
    """``field`` (``VmHWM``, ``VmRSS``) of process ``pid`` in KiB; 0 once it has ended."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def restart_peak(pid: int) -> bool:
    """Restart the kernel's peak of ``pid``; ``False`` where it cannot be."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


class LineCounter:
    """Evaluations in a growing ``evaluations.csv``, counted from the bytes added since the last
    call (the header left out)."""

    def __init__(self, path: Path):
        self.path, self.offset, self.lines = path, 0, 0

    def __call__(self) -> int:
        if not self.path.exists():
            return 0
        with open(self.path, "rb") as file:
            file.seek(self.offset)
            added = file.read()
        self.offset += len(added)
        self.lines += added.count(b"\n")
        return max(self.lines - 1, 0)


class Watch:
    """Reads the campaign's memory every ``interval`` seconds until it ends (module docstring):
    ``samples``, and whether their peaks are the kernel's (``exact``)."""

    def __init__(self, process: subprocess.Popen, logdir: Path, interval: float):
        self.process, self.logdir, self.interval = process, logdir, interval
        self.samples: list[Sample] = []
        self.exact = True

    def run(self) -> None:
        count = LineCounter(self.logdir / "evaluations.csv")
        self.logdir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.logdir.parent / f"{self.logdir.name}_memory.txt", "w") as log:
            while self.process.poll() is None:
                time.sleep(self.interval)
                pids = [self.process.pid, *children(self.process.pid)]
                peaks = [status_kib(p, "VmHWM") for p in pids]
                resident = status_kib(self.process.pid, "VmRSS")
                if not resident:  # it ended while this slept
                    break
                self.exact = all([restart_peak(p) for p in pids]) and self.exact
                if not self.exact:
                    peaks = [status_kib(p, "VmRSS") for p in pids]
                sample = Sample(time.time(), count(), peaks[0], resident, sum(peaks[1:]))
                self.samples.append(sample)
                log.write(" ".join(str(v) for v in vars(sample).values()) + "\n")
                log.flush()


def batches(logdir: Path) -> tuple[list[tuple[int, float]], list[float]]:
    """(evaluations told by each batch's submission, its seconds since the last's) and the scores
    in the order told."""
    submitted: dict[int, float] = {}
    told: dict[int, int] = {}
    scores: list[float] = []
    with open(logdir / "evaluations.csv") as file:
        for row in csv.DictReader(file):
            batch = int(row["batch"])
            submitted.setdefault(batch, float(row["submitted"]))
            told.setdefault(batch, len(scores))
            scores.append(float(row["score"]) if row["score"] else float("-inf"))
    order = sorted(submitted)
    gaps = [(told[b], submitted[b] - submitted[a]) for a, b in zip(order, order[1:])]
    return gaps, scores


def report(samples: list[Sample], exact: bool, logdir: Path, marks: list[int], window: int) -> None:
    gaps, scores = batches(logdir)
    gib = 2.0**20
    how = "the kernel's peaks" if exact else "sampled resident memory (clear_refs not writable)"
    print(f"# {len(scores)} evaluations; memory from {how}, every read; GiB")
    print("evaluations  peak up to  near  low near  with workers  s/batch  best-100 mean")
    first: Optional[float] = None
    for mark in marks:
        if mark > len(scores):
            print(f"{mark:>11}  (not reached)")
            continue
        upto = [s for s in samples if s.evaluations <= mark]
        near = [s for s in samples if abs(s.evaluations - mark) <= window / 2]
        if not upto or not near:
            print(f"{mark:>11}  (no reads)")
            continue
        peak = max(s.peak for s in upto) / gib
        first = peak if first is None else first
        tree = max(s.peak + s.workers for s in near) / gib
        seconds = [g for n, g in gaps if abs(n - mark) <= window / 2]
        best = statistics.fmean(sorted(scores[:mark])[-100:])
        print(
            f"{mark:>11}  {peak:10.3f}  {max(s.peak for s in near) / gib:.3f}  "
            f"{min(s.resident for s in near) / gib:8.3f}  {tree:12.3f}  "
            f"{statistics.median(seconds) if seconds else float('nan'):7.2f}  {best:.4f}"
            f"   (peak up to here / at {marks[0]}: {peak / first:.2f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=30_000)
    parser.add_argument("--at", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--objective", default="qed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between reads")
    parser.add_argument("--window", type=int, default=2_000, help="evaluations around a mark")
    parser.add_argument("--logdir", type=Path, help="the campaign's (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        logdir = args.logdir or Path(temporary) / "run"
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        process = subprocess.Popen(screen_command(args, logdir), env=env)
        watching = Watch(process, logdir, args.interval)
        try:
            watching.run()
        except KeyboardInterrupt:  # the campaign ends cleanly on SIGTERM; report what it told
            process.terminate()
            process.wait()
        if process.returncode:
            print(f"the campaign ended with status {process.returncode}")
        if watching.samples:
            report(watching.samples, watching.exact, logdir, sorted(args.at), args.window)


if __name__ == "__main__":
    main()
