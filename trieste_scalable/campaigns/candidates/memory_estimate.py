"""What a library campaign will hold in memory at its last batch, estimated before its first
(:func:`check_memory`), so a campaign that cannot fit says so, with the setting that would fit,
instead of failing hours in.

The parts, in bytes, for N candidates of W fingerprint bits, n evaluations at the end and a
model over m points (``gp-bucb``'s dictionary, ``ts``'s inducing points; m = n for an exact GP):

- the library's packed rows, N W / 8;
- the evaluated rows, unpacked to floats for the kernel, n W 8, :data:`ROW_COPIES` times (the
  told dataset, the one a tell makes of it and the temporaries of the model's update: the model
  shares the dataset's rows where none repeats, :mod:`~trieste_scalable.models.data`);
  *packed*, n W / 8 as many times, where the model keeps them as packed bits (a make-on-demand
  campaign whose rule's model reads them so: ``packed_width``);
- the model's factors, four [m, m] matrices, and [n, m] blocks: the cross-covariance with the
  evaluations and the dictionary draw's rows, :data:`CROSS_BLOCKS` of them at once; *packed*,
  the model reads the evaluations a chunk at a time, so the blocks are [chunk, m], and the
  draw's rows [m, min(n, :data:`PIVOT_CANDIDATES` m)];
- the candidates scored a chunk at a time: a chunk's rows unpacked and four [chunk, m]
  kernel intermediates;
- TensorFlow and the interpreter, :data:`BASELINE`.

The estimate is the parts' sum times :data:`MARGIN`, chosen to lie above every peak resident
memory measured by ``benchmarks/library_scale_rules.py`` and ``benchmarks/hts_scale.py``, and
within twice it (the peaks against the estimates: ``benchmarks/results/design_measurements.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ...chemistry.molecules import fingerprint_width
from ...errors import UsageError
from ..algorithms.registry import algorithm
from ..spec.library import LibrarySpec

BASELINE = 1.0e9
"""Bytes TensorFlow, Trieste and the interpreter take before a campaign holds anything."""
MARGIN = 2.2
"""The largest measured peak over the sum of the parts (module docstring), rounded up."""
ROW_COPIES = 2
"""Copies of the evaluated rows a campaign holds at once: the told dataset and the one a tell
makes of it (the model shares the dataset's rows, :mod:`~trieste_scalable.models.data`)."""
CROSS_BLOCKS = 6
"""[n, m] blocks the model holds at once while it is updated (module docstring)."""
CHUNK = 2048
"""Candidates a compiled call scores: the models' ``chunk_size``
(``trieste_scalable.models.base.CHUNK_SIZE``, not imported: the estimate loads no
TensorFlow; ``tests`` check the two agree)."""
PIVOT_CANDIDATES = 16
"""The inputs a packed dictionary draw reads per pivot
(:class:`~trieste_scalable.models.PivotedCholeskyDictionary`'s ``candidates``; ``tests`` check
the two agree)."""
SMALLEST_DICTIONARY = 100
"""The smallest dictionary :func:`check_memory` offers."""


@dataclass(frozen=True)
class MemoryEstimate:
    """The estimated peak (bytes) of each part of a campaign (module docstring)."""

    library: float
    evaluated_rows: float
    model: float
    scoring: float

    @property
    def total(self) -> float:
        """The estimated peak, with the margin and the baseline."""
        parts = self.library + self.evaluated_rows + self.model + self.scoring
        return MARGIN * (BASELINE + parts)


def estimate(
    num_candidates: int, width: int, evaluations: int, model_points: int, packed: bool = False
) -> MemoryEstimate:
    """The parts for ``num_candidates`` rows of ``width`` bits, ``evaluations`` at the end and
    a model over ``model_points``, the evaluated rows ``packed`` or not (module docstring)."""
    m = min(model_points, evaluations)
    if packed:
        rows = ROW_COPIES * evaluations * width / 8
        blocks = CROSS_BLOCKS * CHUNK * m + m * min(evaluations, PIVOT_CANDIDATES * m)
    else:
        rows, blocks = 8.0 * ROW_COPIES * evaluations * width, CROSS_BLOCKS * evaluations * m
    return MemoryEstimate(
        library=num_candidates * width / 8,
        evaluated_rows=rows,
        model=8.0 * (4 * m * m + blocks),
        scoring=8.0 * CHUNK * (width + 4 * m),
    )


def packed_rows(spec: LibrarySpec) -> bool:
    """Whether the campaign's model keeps the evaluated fingerprints as packed bits: over a
    make-on-demand space, for a rule whose entry ``reads_packed_inputs``."""
    return spec.make_on_demand and algorithm(spec.rule).reads_packed_inputs


def model_points(spec: LibrarySpec) -> int:
    """m for the campaign's rule (module docstring), by its registry entry's
    ``model_size``: all evaluations for an exact GP, none for random
    search."""
    evaluations = spec.initial + spec.budget
    entry = algorithm(spec.rule)
    if entry.model_size == "dictionary":
        return spec.dictionary_size or evaluations
    if entry.model_size == "inducing":
        return spec.inducing or entry.default_inducing(library=True) or evaluations
    return 0 if entry.model_size == "none" else evaluations


def check_memory(
    spec: LibrarySpec, num_candidates: int, available: Optional[float] = None
) -> MemoryEstimate:
    """The estimate of ``spec``'s campaign (resolved) over ``num_candidates`` molecules, checked
    against the memory available.

    :param available: Bytes available (default this machine's, :func:`available_memory`).
    :raise UsageError: If the estimate exceeds what is available, naming the largest part and,
        for ``gp-bucb``, the largest dictionary (``--inducing``) that would fit.
    """
    evaluations = spec.initial + spec.budget
    kind, _, size = spec.fingerprint_settings
    width = fingerprint_width(kind, size)
    points = model_points(spec)
    packed = packed_rows(spec)
    found = estimate(num_candidates, width, evaluations, points, packed)
    room = available_memory() if available is None else available
    if room is None or found.total <= room:
        return found
    parts = dict(
        library=found.library,
        evaluated_rows=found.evaluated_rows,
        model=found.model,
        scoring=found.scoring,
    )
    largest = max(parts, key=lambda name: parts[name])
    advice = (
        "a library store screened with --scoring-actors, a narrower --fingerprint-width or "
        "a smaller --budget"
    )
    if algorithm(spec.rule).model_size == "dictionary":
        fits = [
            m
            for m in (4000, 2000, 1000, 500, 200, SMALLEST_DICTIONARY)
            if m < points and estimate(num_candidates, width, evaluations, m, packed).total <= room
        ]
        if fits:
            advice = f"--inducing {fits[0]} (a Nystrom GP over {fits[0]} of the evaluations)"
    raise UsageError(
        f"this campaign would need about {_gb(found.total)} of memory at its last batch "
        f"({evaluations} evaluations of {num_candidates} molecules, {width}-bit fingerprints, "
        f"a model over {min(points, evaluations)} points; the largest part: "
        f"{largest.replace('_', ' ')}, {_gb(parts[largest])}), but {_gb(room)} is available; "
        f"it would fit with {advice}"
    )


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> Optional[float]:
    """Bytes this machine can give a new campaign (``MemAvailable``), ``None`` where unknown."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _gb(value: float) -> str:
    return f"{value / 1e9:.1f} GB"
