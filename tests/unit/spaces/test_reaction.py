"""Make-on-demand libraries: reagent files, products made on demand (names, failures, repeats,
fingerprints against an independent featurisation), the Trieste search space over reagent tuples,
and bad input refused with the file and line named."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from trieste_scalable.chemistry.molecules import fingerprints, parse
from trieste_scalable.errors import UsageError
from trieste_scalable.spaces.reaction import (
    AMIDE,
    QUINAZOLINE,
    REAGENTS,
    ReactionLibrary,
)
from trieste_scalable.spaces.reagents import read_reagents
from trieste_scalable.spaces.search_space import MakeOnDemandSpace

pytest.importorskip("rdkit")

AMINES = "CN methylamine\nCCN ethylamine\nNc1ccccc1 aniline\nCCO ethanol\n"
ACIDS = "CC(=O)O acetic\nOC(=O)c1ccccc1 benzoic\n"


def _amide(tmp_path: Path, amines: str = AMINES, acids: str = ACIDS) -> ReactionLibrary:
    (tmp_path / "a.smi").write_text(amines)
    (tmp_path / "b.smi").write_text(acids)
    return ReactionLibrary(
        AMIDE, [read_reagents(tmp_path / "a.smi"), read_reagents(tmp_path / "b.smi")]
    )


def test_products_are_the_amides_named_by_their_reagents(tmp_path: Path) -> None:
    library = _amide(tmp_path)
    assert library.counts == (4, 2) and library.size == 8
    assert library.product([0, 0]) == "CNC(C)=O"
    assert library.product([2, 1]) == "O=C(Nc1ccccc1)c1ccccc1"
    assert library.name([2, 1]) == "aniline|benzoic"
    assert library.products(np.array([[1, 0], [0, 1]])) == ["CCNC(C)=O", "CNC(=O)c1ccccc1"]


def test_a_tuple_whose_reaction_fails_is_remembered_and_never_drawn(tmp_path: Path) -> None:
    library = _amide(tmp_path)  # ethanol is no primary amine
    assert library.product([3, 0]) is None and (3, 0) in library.failed
    assert library.product([3, 0]) is None  # not made again
    assert 3 not in library.usable[0]
    drawn = library.random_tuples(500, np.random.default_rng(0))
    assert set(drawn[:, 0].tolist()) == {0, 1, 2} and set(drawn[:, 1].tolist()) == {0, 1}
    with pytest.raises(ValueError, match="not a tuple of reagent indices"):
        library.product([4, 0])


def test_fingerprints_equal_those_of_the_enumerated_products(tmp_path: Path) -> None:
    """The independent computation: the products written out as SMILES, parsed and featurised
    as any enumerated library is."""
    library = _amide(tmp_path)
    tuples = np.array([[0, 0], [3, 1], [2, 1], [1, 0]])
    kept, packed = library.fingerprints(tuples, ("morgan", 2, 256))
    assert kept.tolist() == [0, 2, 3]
    smiles = ["CNC(C)=O", "O=C(Nc1ccccc1)c1ccccc1", "CCNC(C)=O"]
    expected = fingerprints(parse(smiles)[0], "morgan", 2, 256)
    assert np.array_equal(np.unpackbits(packed, axis=1)[:, :256], expected)


def test_memory_holds_a_bounded_number_of_products(tmp_path: Path) -> None:
    (tmp_path / "a.smi").write_text("".join(f"{'C' * n}N a{n}\n" for n in range(1, 41)))
    (tmp_path / "b.smi").write_text("".join(f"{'C' * n}C(=O)O b{n}\n" for n in range(1, 21)))
    library = ReactionLibrary(
        AMIDE, [read_reagents(tmp_path / "a.smi"), read_reagents(tmp_path / "b.smi")], cache_size=10
    )
    made = library.products(np.stack(np.meshgrid(range(40), range(20)), -1).reshape(-1, 2))
    assert len(made) == 800 and len(set(made)) == 800 and None not in made
    assert len(library._products) == 10  # the most recent ten
    assert library.product([39, 19]) == "C" * 40 + "NC(=O)" + "C" * 20  # a40 and b20


def test_cached_fingerprints_hold_only_their_own_bytes(tmp_path: Path) -> None:
    """A cached row must not view the array its request made: one row kept would keep all of
    that array (the cache held 2-3 times its rows' bytes in a campaign's searches)."""
    (tmp_path / "a.smi").write_text("".join(f"{'C' * n}N a{n}\n" for n in range(1, 41)))
    (tmp_path / "b.smi").write_text("".join(f"{'C' * n}C(=O)O b{n}\n" for n in range(1, 21)))
    library = ReactionLibrary(
        AMIDE, [read_reagents(tmp_path / "a.smi"), read_reagents(tmp_path / "b.smi")], workers=1
    )
    space = MakeOnDemandSpace(library, ("morgan", 2, 256), cache_size=10)
    tuples = np.stack(np.meshgrid(range(40), range(20)), -1).reshape(-1, 2)
    kept, packed = space.features(tuples.astype(np.float64))
    assert len(kept) == 800 and len(space._rows) == 10
    cached = list(space._rows._values.values())
    assert all(row.base is None and row.nbytes == 32 for row in cached)
    assert np.array_equal(np.stack(cached), packed[-10:])  # the last ten asked


def test_reagent_files_in_both_formats_and_repeats_used_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    smi = tmp_path / "r.smi"
    smi.write_text("CN first one\n\nNCC\nC(N) again\nNC again\n")  # C(N), NC are CN: dropped
    with caplog.at_level(logging.WARNING):
        reagents = read_reagents(smi)
    assert reagents.smiles == ("CN", "CCN") and reagents.names == ("first one", "L3")
    assert "2 reagents repeat an earlier one, used once (line 4: C(N) is the reagent of " in (
        caplog.text
    )
    assert len(caplog.records) == 1  # one line a file, not one a repeat
    csv = tmp_path / "r.csv"
    csv.write_text("ID,Name,SMILES\n1,methyl,CN\n2,ethyl,CCN\n")
    assert read_reagents(csv).names == ("methyl", "ethyl")


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "holds no reagent"),
        ("CN a\nC1CC b\n", r"line 2: the SMILES 'C1CC' does not parse"),
        ("CN a\nCCN a\n", r"line 2: the name 'a' is given to line 1 too"),
    ],
)
def test_bad_reagent_files_are_refused_with_file_and_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.smi"
    path.write_text(content)
    with pytest.raises(UsageError, match=message) as raised:
        read_reagents(path)
    assert str(path) in str(raised.value)
    with pytest.raises(UsageError, match="does not exist"):
        read_reagents(tmp_path / "missing.smi")
    with pytest.raises(UsageError, match="is a directory"):
        read_reagents(tmp_path)


def test_bad_reactions_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.smi").write_text(AMINES)
    (tmp_path / "b.smi").write_text(ACIDS)
    amines, acids = read_reagents(tmp_path / "a.smi"), read_reagents(tmp_path / "b.smi")
    with pytest.raises(UsageError, match="does not parse"):
        ReactionLibrary("[NH2:2][#6:1.[C]>>", [amines, acids])
    with pytest.raises(UsageError, match="3 reactant templates but 2 reagent files"):
        ReactionLibrary(QUINAZOLINE, [amines, acids])
    with pytest.raises(UsageError, match=f"no reagent of {tmp_path / 'b.smi'} matches"):
        ReactionLibrary(
            AMIDE,
            [amines, amines.__class__(tmp_path / "b.smi", ("CCO",), ("e",), amines.molecules[3:])],
        )


def test_the_search_space_samples_distinct_products_and_knows_its_points(tmp_path: Path) -> None:
    space = MakeOnDemandSpace(_amide(tmp_path), ("morgan", 2, 256))
    points = space.sample(6, seed=3)
    assert points.shape == (6, 2) and points.dtype == tf.float64
    assert len({tuple(p) for p in points.numpy().tolist()}) == 6  # every product: 3 x 2
    assert np.array_equal(space.sample(6, seed=3), points)
    assert bool(tf.reduce_all(space.contains(points)))
    assert not bool(space.contains(tf.constant([0.5, 0.0], tf.float64)))
    assert not bool(space.contains(tf.constant([4.0, 0.0], tf.float64)))
    assert not space.has_bounds  # as Trieste's categorical spaces: indices, not coordinates
    with pytest.raises(AttributeError, match="no numerical bounds"):
        _ = space.lower
    kept, packed = space.features(points)
    assert kept.tolist() == list(range(6)) and packed.shape == (6, 32)
    assert space == MakeOnDemandSpace(_amide(tmp_path), ("morgan", 2, 256))
    assert "8 reagent tuples" in repr(space)
    with pytest.raises(ValueError, match="asked for 9 distinct products, found 6"):
        space.sample(9, seed=3)  # 2 of its 8 tuples make nothing: never fewer points silently


def test_walters_quinazoline_subset_makes_every_product_it_is_asked_for() -> None:
    lists = [
        read_reagents(REAGENTS / f"{n}_100.smi.gz")
        for n in ("aminobenzoic", "primary_amines", "carboxylic_acids")
    ]
    library = ReactionLibrary(QUINAZOLINE, lists)
    assert library.size == 10**6
    drawn = library.random_tuples(200, np.random.default_rng(1))
    made = library.products(drawn)
    assert sum(m is None for m in made) == 0
    from rdkit import Chem

    ring = Chem.MolFromSmarts("[#6]c1n[c][c]c(=O)n1[#6]")  # the product template's ring
    assert all(Chem.MolFromSmiles(m).HasSubstructMatch(ring) for m in made)


def test_radical_reagents_are_left_out_in_one_line_unless_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Walters' amine 1560406258 has an unpaired electron: left out with one warning naming the
    count; kept on request, its product is a radical, so its tuple fails for that reason."""
    amines = AMINES + "N[C]1CCc2ccccc21 1560406258\nC[CH2] ethyl-radical\n"
    (tmp_path / "a.smi").write_text(amines)
    with caplog.at_level(logging.WARNING):
        reagents = read_reagents(tmp_path / "a.smi")
    assert reagents.names == ("methylamine", "ethylamine", "aniline", "ethanol")
    warned = [r.getMessage() for r in caplog.records if "unpaired electrons" in r.getMessage()]
    assert len(warned) == 1 and "2 reagents" in warned[0] and "1560406258" in warned[0]
    (tmp_path / "b.smi").write_text(ACIDS)
    kept = read_reagents(tmp_path / "a.smi", keep_radicals=True)
    library = ReactionLibrary(AMIDE, [kept, read_reagents(tmp_path / "b.smi")])
    assert library.product([4, 0]) is None and (4, 0) in library.failed
    assert library.product([0, 0]) == "CNC(C)=O" and library.failures == {"radical": 1}
    assert library.product([3, 0]) is None and library.failures["no product"] == 1
    (tmp_path / "r.smi").write_text("N[C]1CCc2ccccc21 1560406258\n")
    with pytest.raises(UsageError, match="holds no reagent but radicals"):
        read_reagents(tmp_path / "r.smi")


def test_a_two_site_reagent_reacts_at_one_site_however_written_and_it_is_said(
    tmp_path: Path,
) -> None:
    """``NCCc1ccc(N)cc1`` and ``Nc1ccc(CCN)cc1`` are one molecule with an alkyl and an aryl NH2:
    each written way gives the same product (before, each its own site); the ambiguity and a
    second product template are named at start."""
    made = []
    for n, written in enumerate(["NCCc1ccc(N)cc1", "Nc1ccc(CCN)cc1"]):
        (tmp_path / f"a{n}.smi").write_text(f"{written} dianiline\nCN methylamine\n")
        (tmp_path / "b.smi").write_text(ACIDS)
        reagents = [read_reagents(tmp_path / f"a{n}.smi"), read_reagents(tmp_path / "b.smi")]
        library = ReactionLibrary(AMIDE, reagents)
        made.append(library.product([0, 0]))
        lines = library.ambiguities()
        assert len(lines) == 1 and "a" + str(n) + ".smi: 1 reagent matches" in lines[0]
    assert made[0] is not None and made[0] == made[1]
    two_products = AMIDE + ".[OH2]"
    library = ReactionLibrary(two_products, reagents)
    assert library.ambiguities()[-1] == "the reaction has 2 product templates: the first is kept"
    assert library.product([1, 0]) == "CNC(C)=O"


def test_product_names_never_collide_and_a_name_holding_the_separator_is_refused(
    tmp_path: Path,
) -> None:
    """``acid_1`` + ``x`` and ``acid`` + ``1_x`` were both ``acid_1_x``; names keep their spaces."""
    library = _amide(tmp_path, "CN acid\nCCN acid_1\n", "CC(=O)O 1_x\nOC(=O)c1ccccc1 x\n")
    assert library.name([1, 1]) == "acid_1|x" and library.name([0, 0]) == "acid|1_x"
    (tmp_path / "a.smi").write_text("CN methyl amine\nCCN ethyl|amine\n")
    with pytest.raises(UsageError, match="line 2: the name 'ethyl|amine' holds '|'"):
        read_reagents(tmp_path / "a.smi")
