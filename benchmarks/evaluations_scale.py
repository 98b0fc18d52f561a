"""Memory and seconds a batch of a make-on-demand campaign at 10,000 to 100,000 evaluations, with
the package as it was before issue 81 (``--before``, a commit: its package and benchmarks, taken
with ``git archive``) and as it is now, side by side in one run; and whether the two ways of
fingerprinting products give the same fingerprints.

Each configuration runs in a process of its own (so each peak memory is its own): ``N`` random
distinct products of Walters' quinazoline space over his full reagent lists (2.19 x 10^10), scored
by QED (made and scored in a child process, as a campaign's objective scores a batch at a time
elsewhere: from run 6 of the results on), told to ours (the pool rule around GP-BUCB with screen's
settings for a make-on-demand space: ``make_on_demand.pool_optimizer`` of that version), then
``--asks`` batches of 100, each asked, scored and told. Printed: the median seconds of an ask and of
a tell, the process's peak memory (a process past ``--memory-limit`` GB stops, reported so) and its
peak while it asks and tells (``batches``: the setup's products and scores freed), and the mean QED
of the products the batches picked beside that of the N random ones (``picked``, ``random``): with
``--dictionaries``, for the package now with dictionaries of other sizes too (issue 81's question
whether 1,000 points still find what a larger dictionary would at scale); with ``--move-sizes``,
for the package now with the pool searches' moves scoring that many options (``screen
--pool-move-size``: fewer products an ask, for its seconds against what it picks). The first
batch is left out of the medians: it starts the worker processes and compiles.
``--fill-caches 200000`` fingerprints that many random products before the first batch, so the
space's bounded caches are as full as those of a campaign past 200,000 products scored (one of
10,000 evaluations has scored about 800,000); without it, the caches hold what N and the batches
touched, and the peak grows with N by that too.

    python benchmarks/evaluations_scale.py --evaluations 10000 30000 100000
    python benchmarks/evaluations_scale.py --same-fingerprints 100000 --evaluations   # the check
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import inspect
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import make_on_demand  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.data import Dataset  # noqa: E402

from trieste_scalable.campaigns.algorithms.registry import algorithm  # noqa: E402
from trieste_scalable.chemistry.molecules import (  # noqa: E402
    DEFAULT_FINGERPRINT,
    DEFAULT_RADIUS,
    DEFAULT_WIDTH,
    fingerprint_width,
    fingerprints,
)
from trieste_scalable.spaces.pool_rule import MakeOnDemandPoolRule  # noqa: E402
from trieste_scalable.spaces.reaction import ReactionLibrary  # noqa: E402
from trieste_scalable.spaces.search_space import MakeOnDemandSpace  # noqa: E402

SETTINGS = (DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH)
WAYS = ("before", "now")
INDUCING = algorithm("gp-bucb").default_inducing(library=True)
"""GP-BUCB's dictionary, as screen's."""
MOVE_SIZE = inspect.signature(MakeOnDemandPoolRule).parameters["move_size"].default
"""The pool searches' default move size (screen's)."""


class LibraryBefore(ReactionLibrary):
    """Products and fingerprints as made before issue 81: in this process, each product's
    fingerprint from its canonical SMILES read back."""

    def fingerprints(self, indices: np.ndarray, settings: tuple) -> tuple[np.ndarray, np.ndarray]:
        from rdkit import Chem

        made = self.products(indices)
        kept = np.array([i for i, s in enumerate(made) if s is not None], dtype=np.int64)
        if not kept.size:
            return kept, np.zeros((0, -(-fingerprint_width(*settings[::2]) // 8)), np.uint8)
        molecules = [Chem.MolFromSmiles(made[i]) for i in kept]
        return kept, np.packbits(fingerprints(molecules, *settings, chirality=True), axis=1)


def library(way: str, space: str = "quinazoline") -> ReactionLibrary:
    reagents = make_on_demand.library_of(space).reagents
    if way == "before":
        return LibraryBefore(make_on_demand.SPACES[space][0], reagents, workers=1)
    return ReactionLibrary(make_on_demand.SPACES[space][0], reagents)


def one(
    evaluations: int,
    asks: int,
    seed: int,
    memory_limit: float,
    dictionary: int = INDUCING,
    fill: int = 0,
    transform: str = "none",
    move_size: int = MOVE_SIZE,
) -> dict[str, Any]:
    """One configuration (module docstring), in this process, with the package it imports; the
    model's dictionary of ``dictionary`` points; ``fill`` random products fingerprinted before
    the first batch (so the space's caches are as full as a long campaign's); the model's outcome
    ``transform`` (``screen --transform``); the pool searches' ``move_size`` (``screen
    --pool-move-size``)."""
    made = library("now")
    space = MakeOnDemandSpace(made, SETTINGS)
    score = make_on_demand.objective_of("qed", "")
    _watch_memory(memory_limit)

    def observe(points: Any) -> Dataset:
        smiles = made.products(np.rint(np.asarray(points)).astype(np.int64))
        return Dataset(tf.constant(points), tf.constant(-score(smiles)[:, None]))

    started = time.perf_counter()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as elsewhere:
        points, scores = elsewhere.submit(_scored_sample, evaluations, seed).result()
    data = Dataset(tf.constant(points), tf.constant(scores))
    if hasattr(make_on_demand, "pool_optimizer"):
        pool = {} if move_size == MOVE_SIZE else {"move_size": move_size}
        ask_tell = make_on_demand.pool_optimizer(space, data, seed, dictionary, transform, **pool)
    else:  # the package before issue 81, whose benchmark built the same inline
        ask_tell = _optimizer_before(space, data, seed, transform)
    if fill:
        space.features(space.random_tuples(fill, np.random.default_rng(seed + 1)))
    setup = time.perf_counter() - started
    _start_batch_peak()
    ask, tell, picked = [], [], []
    for _ in range(asks):
        started = time.perf_counter()
        batch = ask_tell.ask()
        ask.append(time.perf_counter() - started)
        told = observe(batch)
        picked.extend((-told.observations.numpy()[:, 0]).tolist())
        started = time.perf_counter()
        ask_tell.tell(told)
        tell.append(time.perf_counter() - started)
    return {
        "ask": ask,
        "tell": tell,
        "setup": setup,
        "peak_gb": _peak_gb(),
        "batch_peak_gb": _batch_peak_gb(),
        "picked": float(np.mean(picked)),
        "random": float(np.mean(-data.observations.numpy())),
    }


def _scored_sample(evaluations: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The setup's ``evaluations`` random products (tuples [N, k]) and their Trieste scores
    [N, 1], made and scored in a process of its own: a campaign's objective scores a batch at a
    time, and the residue of RDKit making and scoring N at once is not the campaign's memory."""
    made = library("now")
    points = MakeOnDemandSpace(made, SETTINGS).sample(evaluations, seed=seed).numpy()
    smiles = made.products(np.rint(points).astype(np.int64))
    return points, -make_on_demand.objective_of("qed", "")(smiles)[:, None]


def _optimizer_before(space: Any, data: Dataset, seed: int, transform: str) -> Any:
    """``make_on_demand.pool_optimizer`` with the package before issue 81 (as its
    ``pool_campaign`` built it: the model's rows float64)."""
    from trieste.ask_tell_optimization import AskTellOptimizer

    from trieste_scalable.acquisition import ConfidenceWidth
    from trieste_scalable.campaigns.algorithms.builders import build
    from trieste_scalable.campaigns.candidates.library_models import screening_regulariser
    from trieste_scalable.kernels import Tanimoto
    from trieste_scalable.spaces.featurised import FeatureRows, FeaturisedModel
    from trieste_scalable.spaces.pool_rule import MakeOnDemandPoolRule

    scale = 1.0 if transform != "none" else float(np.var(data.observations.numpy())) or 1.0
    rows = FeatureRows.of(space)
    inner, rule = build(
        "gp-bucb",
        rows.dataset(data),
        kernel=Tanimoto(variance=scale, binary_inputs=True),
        noise_variance=screening_regulariser("gp-bucb", scale),
        width=ConfidenceWidth("constant", beta=2.0),
        batch_size=make_on_demand.BATCH,
        max_batch_size=make_on_demand.BATCH,
        fixed_batches=True,
        fit_hyperparameters=False,
        screening=True,
        seed=seed,
        dictionary_size=INDUCING,
        outcome_transform=transform,
    )
    pool_rule = MakeOnDemandPoolRule(rule, seed=seed, flat_pool=make_on_demand.BATCH)
    return AskTellOptimizer(space, data, FeaturisedModel(inner, rows), pool_rule)


def _start_batch_peak() -> None:
    """Frees what the setup left (garbage, malloc's free pages) and restarts the kernel's count
    of this process's peak resident memory (``VmHWM``), so :func:`_batch_peak_gb` is the peak
    while the campaign asks and tells, not while the benchmark made and scored N products at
    once (a campaign tells them a batch at a time)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def _batch_peak_gb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 2**20


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _watch_memory(limit_gb: float) -> None:
    """Ends this process (printing why) once its resident memory passes ``limit_gb``."""

    def watch() -> None:
        while True:
            with open("/proc/self/statm") as statm:
                resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30
            if resident > limit_gb:
                print(json.dumps({"over_gb": limit_gb}), flush=True)
                os._exit(3)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def same_fingerprints(num: int, seed: int = 0) -> None:
    """Compares the two ways' fingerprints of ``num`` random tuples of the 10^6 subset."""
    tuples = make_on_demand.library_of("subset").random_tuples(num, np.random.default_rng(seed))
    (kept_before, before), (kept_now, now) = (
        library(way, "subset").fingerprints(tuples, SETTINGS) for way in WAYS
    )
    differ = int(np.sum(np.any(before != now, axis=1))) if before.shape == now.shape else -1
    print(
        f"fingerprints of {num:,} random tuples of the 10^6 subset: {len(kept_now):,} products "
        f"(before {len(kept_before):,}), rows that differ: {differ}"
    )


def run(
    way: str,
    evaluations: int,
    options: argparse.Namespace,
    before: Path,
    dictionary: int = INDUCING,
    move_size: int = MOVE_SIZE,
) -> Optional[dict]:
    """One configuration in a process of its own: ``way`` ``before`` runs this script's copy
    beside the benchmarks of ``before`` (an extracted tree), with that tree's package; ``now``
    with a dictionary of ``dictionary`` points and the pool searches' ``move_size``."""
    script = (
        Path(__file__).resolve() if way == "now" else before / "benchmarks" / Path(__file__).name
    )
    environment = dict(os.environ)
    if way == "before":
        script.write_text(Path(__file__).read_text())
        environment["PYTHONPATH"] = str(before)
    command = [sys.executable, str(script), "--one", str(evaluations), "--asks", str(options.asks)]
    command += ["--seed", str(options.seed), "--memory-limit", str(options.memory_limit)]
    command += ["--dictionary", str(dictionary), "--fill-caches", str(options.fill_caches)]
    command += ["--transform", options.transform]
    label = way if dictionary == INDUCING else f"{way} m={dictionary}"
    if move_size != MOVE_SIZE:
        command += ["--move-size", str(move_size)]
        label = f"{way} mv={move_size}"
    done = subprocess.run(
        command, capture_output=True, text=True, env=environment, cwd=script.parent
    )
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    if result is None or "over_gb" in result:
        why = f"over {options.memory_limit:g} GB" if result else done.stderr.strip()[-300:]
        print(f"{evaluations:7d}  {label:10s}  stopped: {why}", flush=True)
        return None
    asks, tells = result["ask"][1:], result["tell"][1:]
    each = ", ".join(f"{a:.1f}+{t:.1f}" for a, t in zip(result["ask"], result["tell"]))
    print(
        f"{evaluations:7d}  {label:10s}  {np.median(asks):7.2f}  {np.median(tells):7.2f}  "
        f"{result['setup']:7.0f}  {result['peak_gb']:7.2f}  {result['batch_peak_gb']:7.2f}  "
        f"{result['picked']:6.3f}  "
        f"{result['random']:6.3f}  {each}",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, nargs="*", default=[10_000])
    parser.add_argument("--asks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--same-fingerprints", type=int, default=20_000, metavar="N")
    parser.add_argument("--before", default="7a977b0", help="the commit before issue 81")
    parser.add_argument("--memory-limit", type=float, default=18.0, metavar="GB")
    parser.add_argument(
        "--dictionaries", type=int, nargs="*", default=[], help="more dictionary sizes, now only"
    )
    parser.add_argument("--dictionary", type=int, default=INDUCING, help=argparse.SUPPRESS)
    parser.add_argument(
        "--move-sizes", type=int, nargs="*", default=[],
        help="more pool move sizes (screen --pool-move-size), now only",
    )  # fmt: skip
    parser.add_argument("--move-size", type=int, default=MOVE_SIZE, help=argparse.SUPPRESS)
    parser.add_argument(
        "--fill-caches", type=int, default=0, metavar="N",
        help="fingerprint N random products first, as a long campaign's caches hold",
    )  # fmt: skip
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument(
        "--transform", default="none", choices=("none", "auto", "log", "power", "rank"),
        help="the model's outcome transform (screen's default over a make-on-demand space: auto)",
    )  # fmt: skip
    parser.add_argument("--one", type=int, metavar="EVALUATIONS", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        result = one(
            options.one,
            options.asks,
            options.seed,
            options.memory_limit,
            options.dictionary,
            options.fill_caches,
            options.transform,
            options.move_size,
        )
        print(json.dumps(result))
        return
    if options.same_fingerprints:
        same_fingerprints(options.same_fingerprints, options.seed)
    if not options.evaluations:
        return
    print(
        f"cores: {os.cpu_count()}; batches of 100 after N random products (QED), the first left out"
    )
    heads = ("ask s", "tell s", "setup s", "peak GB", "batches")
    print(
        f"{'N':>7s}  {'way':10s}  " + "  ".join(f"{h:>7s}" for h in heads)
        + "  picked  random  each ask+tell"
    )  # fmt: skip
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as before:
        archive = subprocess.run(
            ["git", "archive", options.before, "trieste_scalable", "benchmarks"],
            cwd=root, capture_output=True, check=True,
        )  # fmt: skip
        subprocess.run(["tar", "-x", "-C", before], input=archive.stdout, check=True)
        for evaluations in options.evaluations:
            ways = {way: run(way, evaluations, options, Path(before)) for way in options.ways}
            if ways.get("before") and ways.get("now"):
                ratios = [
                    np.median(ways["now"][key][1:]) / np.median(ways["before"][key][1:])
                    for key in ("ask", "tell")
                ]
                peak = ways["now"]["peak_gb"] / ways["before"]["peak_gb"]
                print(
                    f"{evaluations:7d}  now / before: ask {ratios[0]:.2f}, tell {ratios[1]:.2f}, "
                    f"peak memory {peak:.2f}",
                    flush=True,
                )
            for size in options.dictionaries:
                run("now", evaluations, options, Path(before), size)
            for size in options.move_sizes:
                run("now", evaluations, options, Path(before), move_size=size)


if __name__ == "__main__":
    main()
