"""Products and fingerprints made on every core (issue 81): the same SMILES, failures and
fingerprints as one process makes, and fingerprints of the molecule as made equal to those of
its canonical SMILES read back (the path before issue 81, computed here independently), on
Walters' quinazoline reaction (stereo products among them) and a synthon reaction."""

from __future__ import annotations

import logging
import pickle
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit")

from rdkit import Chem  # noqa: E402

from trieste_scalable.chemistry.molecules import fingerprints  # noqa: E402
from trieste_scalable.spaces import product_workers  # noqa: E402
from trieste_scalable.spaces.library import ComponentLibrary  # noqa: E402
from trieste_scalable.spaces.reaction import AMIDE, QUINAZOLINE, REAGENTS, ReactionLibrary  # noqa: E402
from trieste_scalable.spaces.reagents import read_reagents  # noqa: E402
from trieste_scalable.spaces.synthons import CHEMSPACE_SAMPLE, read_synthon_files  # noqa: E402

SETTINGS = ("atom-pair-counts", 2, 2048)
LISTS = ("aminobenzoic_100", "primary_amines_100", "carboxylic_acids_100")


def _quinazoline(workers: int) -> ReactionLibrary:
    reagents = [read_reagents(REAGENTS / f"{name}.smi.gz") for name in LISTS]
    return ReactionLibrary(QUINAZOLINE, reagents, workers=workers)


def _read_back(library: ComponentLibrary, tuples: np.ndarray) -> tuple[list, np.ndarray]:
    """Each tuple's SMILES, and fingerprints of those read back from SMILES (packed)."""
    made = library.products(tuples)
    molecules = [Chem.MolFromSmiles(s) for s in made if s is not None]
    return made, np.packbits(fingerprints(molecules, *SETTINGS, chirality=True), axis=1)


@pytest.mark.parametrize("source", ["quinazoline", "synthons"])
def test_workers_make_what_one_process_makes_and_reading_back_would(source: str) -> None:
    if source == "quinazoline":
        parallel, alone = _quinazoline(2), _quinazoline(1)
    else:
        parallel = read_synthon_files([CHEMSPACE_SAMPLE])["a8"]
        alone = read_synthon_files([CHEMSPACE_SAMPLE])["a8"]
        parallel._workers.workers, alone._workers.workers = 2, 1
    tuples = parallel.random_tuples(3 * product_workers.PARALLEL_FROM, np.random.default_rng(0))
    kept, packed = parallel.fingerprints(tuples, SETTINGS)
    assert parallel._workers._pool is not None  # the request went to the workers
    kept_alone, packed_alone = alone.fingerprints(tuples, SETTINGS)
    assert np.array_equal(kept, kept_alone) and np.array_equal(packed, packed_alone)
    made, read_back = _read_back(_quinazoline(1) if source == "quinazoline" else alone, tuples)
    assert kept.tolist() == [i for i, s in enumerate(made) if s is not None]
    assert np.array_equal(packed, read_back)
    assert parallel.products(tuples) == made  # written when asked for, here
    if source == "quinazoline":
        assert any("@" in s for s in made if s is not None)  # stereo products were tested


def test_fingerprints_write_no_smiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The searches' products are fingerprinted without writing their SMILES; the SMILES of
    those asked for later are the ones a library that never fingerprinted them writes."""
    library = _quinazoline(1)
    tuples = library.random_tuples(40, np.random.default_rng(5))
    written = []
    monkeypatch.setattr(Chem, "MolToSmiles", lambda *a, **k: written.append(1) or "")
    kept, _ = library.fingerprints(tuples, SETTINGS)
    assert len(kept) > 30 and not written and not len(library._products)
    monkeypatch.undo()
    assert library.products(tuples) == _quinazoline(1).products(tuples)


def test_failures_are_remembered_as_in_one_process(tmp_path: Path) -> None:
    (tmp_path / "a.smi").write_text("".join(f"{'C' * n}N a{n}\n" for n in range(1, 41)) + "CCO e\n")
    (tmp_path / "b.smi").write_text("".join(f"{'C' * n}C(=O)O b{n}\n" for n in range(1, 11)))
    reagents = [read_reagents(tmp_path / "a.smi"), read_reagents(tmp_path / "b.smi")]
    tuples = np.stack(np.meshgrid(range(41), range(10)), -1).reshape(-1, 2)
    libraries = [ReactionLibrary(AMIDE, reagents, workers=workers) for workers in (2, 1)]
    for library in libraries:  # ethanol (a40) makes nothing with any acid
        kept, _ = library.fingerprints(tuples, SETTINGS)
        assert len(kept) == 400 and library.failures == {"no product": 10}
        assert {key for key in library.failed} == {(40, b) for b in range(10)}


def test_the_workers_end_with_their_library() -> None:
    library = _quinazoline(2)
    library.fingerprints(
        library.random_tuples(product_workers.PARALLEL_FROM, np.random.default_rng(4)), SETTINGS
    )
    processes = list(library._workers._pool._processes.values())  # type: ignore[union-attr]
    assert processes and all(p.is_alive() for p in processes)
    del library
    for process in processes:
        process.join(timeout=30)
    assert not any(p.is_alive() for p in processes)


def test_a_library_sent_to_a_worker_carries_no_caches() -> None:
    library = _quinazoline(1)
    library.products(library.random_tuples(20, np.random.default_rng(1)))
    copy = pickle.loads(pickle.dumps(library))
    assert len(library._products) and not len(copy._products) and copy._workers.workers == 1
    tuples = library.random_tuples(5, np.random.default_rng(2))
    assert copy.products(tuples) == library.products(tuples)


def test_workers_that_cannot_start_leave_it_to_this_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    library = _quinazoline(2)

    def broken(_: ComponentLibrary) -> None:
        raise BrokenProcessPool("a child process terminated abruptly")

    monkeypatch.setattr(library._workers, "_executor", broken)
    tuples = library.random_tuples(product_workers.PARALLEL_FROM, np.random.default_rng(3))
    with caplog.at_level(logging.WARNING):
        kept, packed = library.fingerprints(tuples, SETTINGS)
    assert "making products in this process only" in caplog.text
    assert library._workers.workers == 1
    assert np.array_equal(packed, _quinazoline(1).fingerprints(tuples, SETTINGS)[1])


def test_a_tuple_asked_twice_is_made_once_and_given_twice(tmp_path: Path) -> None:
    (tmp_path / "a.smi").write_text("CN m\nCCO e\n")
    (tmp_path / "b.smi").write_text("CC(=O)O a\n")
    reagents = [read_reagents(tmp_path / "a.smi"), read_reagents(tmp_path / "b.smi")]
    library = ReactionLibrary(AMIDE, reagents, workers=1)
    kept, packed = library.fingerprints(np.array([[0, 0], [1, 0], [0, 0], [1, 0]]), SETTINGS)
    assert kept.tolist() == [0, 2] and np.array_equal(packed[0], packed[1])
    assert library.failures == {"no product": 1}  # ethanol's tuple failed once, not twice


def test_a_large_request_is_made_in_bounded_jobs_in_order() -> None:
    """A request is cut into jobs of at most JOB_SIZE (a job's molecules are held together), and
    the products come back in the order asked."""
    from trieste_scalable.spaces import product_workers

    keys = [(i,) for i in range(5000)]
    jobs = product_workers._jobs(keys, -(-len(keys) // product_workers.JOB_SIZE))
    assert max(len(job) for job in jobs) <= product_workers.JOB_SIZE
    assert [key for job in jobs for key in job] == keys
    assert product_workers._jobs([], 2) == [[]]
