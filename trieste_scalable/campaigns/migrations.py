"""Every path by which a campaign directory written by an earlier version still loads, in one
place (each tested in ``tests/unit/campaigns/test_old_campaigns.py``):

- a ``run.json`` from before a setting existed: the setting takes the value those campaigns ran
  with (:func:`with_legacy_settings`);
- an ``evaluations.csv`` of a synchronous campaign from before one engine, without job and timing
  columns (:func:`with_timing_columns`; the log writes it back);
- a library hash of all the values' float64 bits, from before 2026-11-26 (:func:`hash_matches`);
- a prospective campaign's library as a relative path (:func:`with_absolute_library`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Collection, Optional

from ..errors import CampaignError

LEGACY_SETTINGS: dict[str, Any] = {"batch_policy": "adaptive", "fingerprint": "bits"} | {
    "radius": 2,
    "fingerprint_width": 1024,
    "keep_radicals": lambda saved: bool(saved.get("reaction")),
    "transform": "none",
}
"""Settings of campaigns logged before the setting existed: what they ran with (adaptive
batches; Morgan bits of radius 2, 1,024 wide; a make-on-demand space's radicals kept; no outcome
transform), or a function of their other settings giving it."""


def with_legacy_settings(saved: dict[str, Any], names: Collection[str]) -> dict[str, Any]:
    """``saved`` settings with those of ``names`` that it predates as its campaign ran them."""
    legacy = {k: v(saved) if callable(v) else v for k, v in LEGACY_SETTINGS.items()}
    return {**{k: v for k, v in legacy.items() if k in names}, **saved}


def with_timing_columns(rows: list[list[str]], width: int, where: str) -> list[list[str]]:
    """An older log's rows [N][width] with job numbers (their order) and blank timings: the
    columns ``job``, ``submitted``, ``started``, ``finished``, ``worker`` and ``error``.

    :raise CampaignError: Naming the line of ``where`` whose row is not ``width`` fields.
    """
    for n, row in enumerate(rows):
        if len(row) != width:
            raise CampaignError(f"{where}, line {n + 2}: expected {width} fields, found {len(row)}")
    return [[*row, str(n), "", "", "", "", ""] for n, row in enumerate(rows)]


def hash_matches(logged: Optional[str], library: str, legacy: Optional[Callable[[], str]]) -> bool:
    """Whether a campaign's logged library hash is its library's: ``library``, or for campaigns
    logged before 2026-11-26 ``legacy()`` (computed only then); a record without one matches."""
    return logged in (None, library) or (legacy is not None and logged == legacy())


def with_absolute_library(saved: dict[str, Any], library: str) -> Optional[dict[str, Any]]:
    """``run.json``'s ``saved`` settings with ``library`` (absolute) where they hold a relative
    path to it (a prospective campaign started before libraries were kept absolute; the rest as
    it was: the library check still reads its hash); ``None`` where nothing changes."""
    kept = Path(str(saved.get("library", "")))
    if kept.is_absolute() or not kept.exists() or kept.resolve() != Path(library):
        return None
    return {**saved, "library": library}
