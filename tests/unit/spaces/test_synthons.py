"""Vendors' synthon files: the reader (each format, each bad input named by file and line),
products against RDKit's own enumeration of the same file, and a make-on-demand search space
over one of its reactions."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit")

from trieste_scalable.errors import UsageError  # noqa: E402
from trieste_scalable.spaces.search_space import MakeOnDemandSpace  # noqa: E402
from trieste_scalable.spaces.synthons import CHEMSPACE_SAMPLE, read_synthon_files  # noqa: E402

SAMPLE_SIZES = {"a1": 397_488, "a2": 38_416, "a3": 3_306, "a4": 97_027, "a5": 7_050}
SAMPLE_SIZES |= {"a6": 81_130, "a7": 142_560, "a77": 144_453, "a8": 718, "a80": 83_768}
"""Products a reaction of the sample, as RDKit's ``SynthonSpace`` counts them."""

AMIDE = """SMILES,synton_id,synton_role,reaction_id
CC[NH][U],e1,synton_1,r1
CCC[NH][U],p1,synton_1,r1
O=C([U])c1ccccc1,b2,synton_2,r1
CC(=O)[U],a2,synton_2,r1
"""


def _lines(reaction: str) -> list[str]:
    """The sample's lines of ``reaction``, with the header."""
    with gzip.open(CHEMSPACE_SAMPLE, "rt") as handle:
        rows = [line for line in handle if not line.startswith("#")]
    return [rows[0]] + [line for line in rows[1:] if line.rstrip().endswith("," + reaction)]


def test_the_sample_reads_as_rdkit_counts_it() -> None:
    reactions = read_synthon_files([CHEMSPACE_SAMPLE])
    assert {name: r.size for name, r in reactions.items()} == SAMPLE_SIZES
    assert reactions["a77"].counts == (3, 179, 269)
    assert reactions["a8"].name((0, 1)).count("|") == 1


@pytest.mark.parametrize("reaction", ["a8", "a3"])
def test_products_are_those_rdkit_enumerates(tmp_path: Path, reaction: str) -> None:
    """Every product of the reaction against ``SynthonSpace.WriteEnumeratedFile``'s, by name:
    identical canonical SMILES (RDKit's written and read once more, as ours are)."""
    from rdkit import Chem
    from rdkit.Chem import rdSynthonSpaceSearch

    path = tmp_path / f"{reaction}.csv"
    path.write_text("".join(_lines(reaction)))
    space = rdSynthonSpaceSearch.SynthonSpace()
    space.ReadTextFile(str(path))
    space.WriteEnumeratedFile(str(tmp_path / "all.smi"))
    theirs = dict(line.split()[::-1] for line in (tmp_path / "all.smi").read_text().splitlines())
    library = read_synthon_files([path])[reaction]
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in library.counts], indexing="ij"), -1)
    tuples = grid.reshape(-1, len(library.counts))
    assert len(tuples) == len(theirs) == SAMPLE_SIZES[reaction]
    for key, made in zip(tuples, library.products(tuples)):
        name = ";".join(library.reagent_names(key)) + f";{reaction}"
        assert made == Chem.CanonSmiles(Chem.CanonSmiles(theirs[name])), name


@pytest.mark.parametrize(
    "text",
    [
        AMIDE,
        AMIDE.split("\n", 1)[1],  # no header
        AMIDE.replace(",", "\t"),
        AMIDE.replace(",", " "),
        "# a vendor's notice\n#\n" + AMIDE.replace(",", "\t"),
    ],
)
def test_every_format_reads_the_same_reaction(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(text)
    (reaction,) = read_synthon_files([path]).values()
    assert reaction.counts == (2, 2) and reaction.reagents[0].names == ("e1", "p1")
    assert reaction.product((1, 0)) == "CCCNC(=O)c1ccccc1"
    assert reaction.name((1, 0)) == "p1|b2"


@pytest.mark.parametrize(
    "text, message",
    [
        ("CC[NH][U] e1 1\n", "line 1: 3 fields"),
        ("CC[NH][U],e1,synton_1,r1\nC(,a2,synton_2,r1\n", "line 2: the SMILES 'C(' does not"),
        ("CC[NH][U],e1,synton_1,r1\nCC(=O)O,a2,synton_2,r1\n", "line 2: CC(=O)O has no link"),
        ("CC[NH][U],e1,synton_1,r1\nCC[NH][U],e1,synton_1,r1\nCC(=O)[U],a,2,r1\n", "line 2:"),
        ("CC[NH][U],e1,synton_1,r1\nCC(=O)[U],a2,synton_3,r1\n", "components [1, 3]"),
        ("CC[NH][U],e1,synton_1,r1\nCC(=O)[Np],a2,synton_2,r1\n", "line 1: the link atom [U]"),
        ("CC[NH][U],e1,synton_1,r1\nCC(=O)[U],a|2,synton_2,r1\n", "holds '|'"),
        ("CC[NH][U],e1,first,r1\n", "the component 'first' has no number"),
        ("# nothing\n", "holds no synthon"),
    ],
)
def test_bad_synthon_files_are_refused_naming_the_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "s.csv"
    path.write_text(text)
    with pytest.raises(UsageError, match=re.escape(message)):
        read_synthon_files([path])
    if "line" in message:
        with pytest.raises(UsageError, match=str(path)):
            read_synthon_files([path])


def test_a_reaction_in_two_files_or_a_missing_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(AMIDE)
    (tmp_path / "b.csv").write_text(AMIDE)
    with pytest.raises(UsageError, match="the reaction r1 is in .*a.csv too"):
        read_synthon_files([tmp_path / "a.csv", tmp_path / "b.csv"])
    with pytest.raises(UsageError, match="does not exist"):
        read_synthon_files([tmp_path / "c.csv"])


def test_a_search_space_over_a_reaction_of_the_sample_draws_distinct_products() -> None:
    """A three-component reaction (a7: 12 x 40 x 297) seen as Trieste sees a reaction
    SMARTS's space: distinct products drawn, features for each (Morgan bits, 256)."""
    library = read_synthon_files([CHEMSPACE_SAMPLE])["a7"]
    space = MakeOnDemandSpace(library, ("morgan", 2, 256))
    points = space.sample(50, seed=0).numpy()
    assert points.shape == (50, 3) and bool(np.all(space.contains(points)))
    assert len(set(library.products(points.astype(int)))) == 50
    kept, packed = space.features(points)
    assert kept.tolist() == list(range(50)) and packed.shape == (50, 32)
