"""Molecules: fingerprints, the property oracle, libraries and the screening problem."""

import gzip
import hashlib
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from rdkit import Chem
from rdkit.Chem import QED, Crippen, rdFingerprintGenerator, rdMolDescriptors

from trieste_scalable.chemistry.molecules import (
    CELECOXIB,
    DEFAULT_FINGERPRINT,
    DEFAULT_RADIUS,
    DEFAULT_WIDTH,
    celecoxib_mpo,
    fingerprints,
    load_smiles,
    parse,
    qed,
    unary_counts,
)
from trieste_scalable.numerics.bits import PackedRows
from trieste_scalable.packed_space import PackedSearchSpace
from trieste_scalable.problems.screening import screening_problem

from ...util import moses

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"


def test_fingerprints_match_rdkit() -> None:
    molecules, _ = parse([CELECOXIB, ASPIRIN])
    bits = fingerprints(molecules, "bits", radius=2, size=512)
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=512)
    on = list(generator.GetFingerprint(molecules[1]).GetOnBits())
    assert bits.shape == (2, 512) and sorted(np.flatnonzero(bits[1])) == on
    counts = fingerprints(molecules, "counts", radius=2, size=512)
    raw = generator.GetCountFingerprintAsNumPy(molecules[0])
    np.testing.assert_array_equal(counts.reshape(2, 3, 512)[0].sum(0), np.minimum(raw, 3))
    np.testing.assert_array_equal(unary_counts(np.array([[0, 2, 5]]), 2), [[0, 1, 1, 0, 1, 1]])


def test_objective_on_known_molecules() -> None:
    molecules, _ = parse([CELECOXIB, ASPIRIN, "C"])
    score = celecoxib_mpo(molecules)
    celecoxib = molecules[0]
    logp = Crippen.MolLogP(celecoxib)  # type: ignore[attr-defined]
    tpsa = rdMolDescriptors.CalcTPSA(celecoxib)
    expected = (
        1.0  # similarity to itself
        * math.exp(-0.5 * (logp - 3.5) ** 2)
        * math.exp(-0.5 * ((tpsa - 80.0) / 20.0) ** 2)
        * QED.qed(celecoxib)
    ) ** 0.25
    np.testing.assert_allclose(score[0], expected)
    assert score[0] > 0.9 and score[0] > score[1] > score[2]
    np.testing.assert_allclose(qed([Chem.MolFromSmiles("c1ccccc1")]), [0.4426], atol=1e-4)


def test_libraries_and_their_errors(tmp_path: Path) -> None:
    assert len(load_smiles("moses-20k")) == 20_000
    smi = tmp_path / "lib.smi"
    smi.write_text(f"{CELECOXIB} celecoxib\n\n{ASPIRIN}\n")
    assert load_smiles(str(smi)) == [CELECOXIB, ASPIRIN]
    table = tmp_path / "lib.csv"
    table.write_text(f"name,SMILES\nc,{CELECOXIB}\na,{ASPIRIN}\n")
    assert load_smiles(str(table)) == [CELECOXIB, ASPIRIN]
    with pytest.raises(ValueError, match="neither a file"):
        load_smiles(str(tmp_path / "missing.smi"))
    (tmp_path / "empty.smi").write_text("\n")
    with pytest.raises(ValueError, match="no molecules"):
        load_smiles(str(tmp_path / "empty.smi"))
    (tmp_path / "bad.csv").write_text("name\nx\n")
    with pytest.raises(ValueError, match="no 'smiles' column"):
        load_smiles(str(tmp_path / "bad.csv"))
    with pytest.raises(ValueError, match=r"1 SMILES could not be parsed \(first: #2 'C1CC'"):
        parse([ASPIRIN, "C1CC"])
    molecules, kept = parse([ASPIRIN, "C1CC", CELECOXIB], skip_invalid=True)
    assert len(molecules) == 2 and list(kept) == [0, 2]


def test_screening_problem_deduplicates_and_scores_recall(tmp_path: Path) -> None:
    library = tmp_path / "lib.smi"
    smiles = moses(200)
    library.write_text("\n".join(smiles + [smiles[0], CELECOXIB]) + "\n")
    problem = screening_problem(str(library), "celecoxib-mpo")
    assert problem.num_molecules == 202 and len(problem.points) == 201  # duplicate dropped
    best = int(np.argmin(problem.values))
    assert problem.labels[best] == CELECOXIB
    top = np.argsort(problem.values)[:3]
    assert problem.recall(top[:1], 0.01) == pytest.approx(1 / 3)  # top 1% of 201 = 3
    np.testing.assert_allclose(
        problem.recall_curve(np.array([5, top[0], top[0], top[1]]), 0.01), [0, 1 / 3, 1 / 3, 2 / 3]
    )
    np.testing.assert_array_equal(problem.indices(problem.points[[7, 3]]), [7, 3])
    # candidates stay bit-packed and read back as the fingerprints themselves
    molecules = parse(smiles + [CELECOXIB])[0]  # the default fingerprint, featurise's too
    dense = fingerprints(molecules, DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH)
    np.testing.assert_array_equal(problem.points[[0, 200]], dense[[0, 200]])
    np.testing.assert_array_equal(problem.points[200], dense[200])
    width = 3 * DEFAULT_WIDTH  # counts: 3 bits a feature
    assert isinstance(problem.points, PackedRows) and problem.points.shape == (201, width)
    assert np.asarray(problem.points.bits).nbytes == 201 * width // 8  # a bit a column
    space = problem.search_space
    assert space.rows is problem.points  # the same packed rows: one copy of the library
    assert isinstance(space, PackedSearchSpace) and space is problem.search_space  # built once
    assert space.index() is problem._index  # one sort of the library, shared
    np.testing.assert_array_equal(space.rows.gather([200]), dense[[200]])
    again = screening_problem(str(library), "celecoxib-mpo")  # from the cache
    np.testing.assert_array_equal(again.values, problem.values)
    # the labels (held as one buffer) are the first molecule of each fingerprint, in order
    assert list(problem.labels) == smiles + [CELECOXIB]
    assert problem.labels[-1] == CELECOXIB and len(problem.labels) == 201
    assert problem.labels.nbytes == sum(len(s) for s in smiles + [CELECOXIB]) + 202 * 8
    legacy = hashlib.sha256("\n".join(smiles + [CELECOXIB]).encode())  # as logs recorded it
    expected = legacy.copy()
    legacy.update(problem.values.tobytes())
    assert problem.content_hash(legacy=True) == legacy.hexdigest()
    expected.update(problem.values.astype(np.float32).tobytes())  # the same on every CPU
    assert problem.content_hash() == expected.hexdigest()
    with pytest.raises(IndexError):
        problem.labels[201]
    with pytest.raises(ValueError, match="unknown objective"):
        screening_problem(str(library), "potency")


def test_tanimoto_kernel_in_our_models_matches_gpflow_gpr() -> None:
    import gpflow
    import tensorflow as tf
    from trieste.data import Dataset

    from trieste_scalable.kernels import Tanimoto
    from trieste_scalable.models import AdaptiveSVGP, ExactDictionary, NystromGPR, ReplicatedGPR

    molecules, _ = parse(moses(80))
    x = fingerprints(molecules, "bits", size=256).astype(np.float64)
    y = celecoxib_mpo(molecules)[:, None]
    data = Dataset(tf.constant(x[:60]), tf.constant(y[:60]))
    mean = gpflow.mean_functions.Constant(float(y[:60].mean()))
    gpr = gpflow.models.GPR(data.astuple(), Tanimoto(0.01), noise_variance=1e-4, mean_function=mean)
    ref_mean, ref_var = gpr.predict_f(x[60:])
    models = [
        ReplicatedGPR(Tanimoto(0.01), 1e-4, data, fit_hyperparameters=False),
        NystromGPR(
            Tanimoto(0.01),
            1e-4,
            data,
            dictionary=ExactDictionary(),
            fit_hyperparameters=False,
            jitter=1e-14,
        ),
        AdaptiveSVGP(
            Tanimoto(0.01), 1e-4, data, inducing=60, fit_hyperparameters=False, jitter=1e-12
        ),
    ]
    for model in models:
        pred_mean, pred_var = model.predict(tf.constant(x[60:]))
        np.testing.assert_allclose(pred_mean, ref_mean, atol=1e-6)
        np.testing.assert_allclose(pred_var, ref_var, atol=1e-7)


def test_moses_full_is_read_from_the_molsets_data_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="pip install --no-deps molsets"):
        monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
        load_smiles("moses-full")
    monkeypatch.undo()
    data = tmp_path / "site" / "moses" / "dataset" / "data"
    data.mkdir(parents=True)
    (data.parents[1] / "__init__.py").write_text("raise ImportError('needs torch')\n")
    parts = {"train": [ASPIRIN, CELECOXIB], "test": ["CCO"], "test_scaffolds": ["c1ccccc1"]}
    for name, smiles in parts.items():
        with gzip.open(data / f"{name}.csv.gz", "wt") as handle:
            handle.write("SMILES,SPLIT\n" + "".join(f"{s},{name}\n" for s in smiles))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert load_smiles("moses-full") == [ASPIRIN, CELECOXIB, "CCO", "c1ccccc1"]  # not imported


def test_labels_over_mapped_bytes_equal_labels_built_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trieste_scalable.chemistry import labels as labels_module
    from trieste_scalable.chemistry.labels import Labels

    strings = ["CCO", "", "c1ccccc1", "é-ü", "N#N", "C"]
    encoded = [s.encode() for s in strings]
    np.save(tmp_path / "bytes.npy", np.frombuffer(b"".join(encoded), np.uint8))
    np.save(tmp_path / "offsets.npy", np.cumsum([0, *map(len, encoded)]).astype(np.int64))
    buffer, offsets = (np.load(tmp_path / f"{n}.npy", mmap_mode="r") for n in ("bytes", "offsets"))
    whole, mapped = Labels(strings), Labels.mapped(buffer, offsets)
    for labels in (whole, mapped):
        assert list(labels) == strings and len(labels) == 6
        assert labels[1:4] == strings[1:4] and labels[::-2] == strings[::-2]
        assert labels[-3] == "é-ü" and "N#N" in labels and labels.index("C") == 5
        assert labels.nbytes == sum(len(s) for s in encoded) + 7 * 8
    assert list(Labels(strings, np.array([4, 0]))) == ["N#N", "CCO"]
    for part in (2**16, 4, 1):  # what a content hash reads, across parts of every size
        monkeypatch.setattr(labels_module, "_PART", part)
        for labels in (whole, mapped, Labels(strings[:1]), Labels([])):
            assert b"".join(labels.joined()) == "\n".join(labels).encode()
    with pytest.raises(IndexError):
        mapped[6]
    with pytest.raises(ValueError, match="offsets must run from 0 to the buffer's 20 bytes"):
        Labels.mapped(buffer, offsets[:-1])
