"""The settings whose default depends on the campaign, resolved by :func:`resolved` into a new
specification (nothing is mutated): the rule, the batch policy and size, and ``screen``'s
fingerprint, each the user's where given, else a resumed campaign's own, else the campaign's."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

from ...chemistry.molecules import DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH
from ...errors import UsageError
from ..algorithms.registry import algorithm as entry_of
from .campaign import CampaignSpec, Spec
from .library import LibrarySpec, ProposeSpec, ScreenSpec
from .record import read_record


def resolved(spec: Spec) -> Spec:
    """``spec`` with every setting that depends on the campaign filled in where not given:

    - ``algorithm``: a resumed campaign's own, else the command's
      (:data:`~.registry.LIBRARY_DEFAULT` in process, on a library store, on its scoring
      actors and in asynchronous campaigns alike);
    - ``batch_policy``: a resumed campaign's own (``adaptive`` for one logged before it existed),
      else the command's; ``adaptive`` for a rule whose epochs are its batches (the MINI rules)
      and, in asynchronous campaigns, for a rule whose registry entry says so
      (``adaptive_when_asynchronous``);
    - ``batch_size``: the command's; with ``--workers N --asynchronous`` the entry's
      :meth:`~.registry.Algorithm.per_worker` times N (times
      :data:`~.library.MAKE_ON_DEMAND_FACTOR` over a make-on-demand space);
    - ``screen``'s ``fingerprint``, ``radius``, ``fingerprint_width``: a resumed campaign's own,
      a library store's, else
      :data:`~trieste_scalable.chemistry.molecules.DEFAULT_FINGERPRINT` (``featurise``'s too);
    - ``transform``: a resumed campaign's own (``none`` for one logged before it existed), else
      ``auto`` over a make-on-demand space and ``none`` over a library (``docs/screening.md``:
      each measured best there).

    :raise UsageError: If ``--resume`` names a campaign of another command, or a library store's
        manifest cannot be read; or on a combination the filled-in values make bad.
    :raise CampaignError: If a resumed campaign's ``run.json`` is damaged.
    """
    saved = _resumed_spec(spec)
    algorithm = spec.algorithm or (saved.algorithm if saved else None) or spec.default_algorithm
    entry, policy = entry_of(algorithm), spec.default_batch_policy
    if entry.batch_policies == ("adaptive",):  # its epochs set its batches
        policy = "adaptive"
    if spec.runs_asynchronously and entry.adaptive_when_asynchronous:
        policy = "adaptive"
    if saved is not None:
        policy = saved.batch_policy or "adaptive"
    policy = spec.batch_policy or policy
    batch_size = spec.batch_size or spec.default_batch_size
    if spec.batch_size is None and isinstance(spec, ScreenSpec) and spec.runs_asynchronously:
        per_worker = entry.per_worker(policy) * spec.proposals_factor
        batch_size = per_worker * int(spec.workers or 0)
    filled: dict[str, Any] = dict(algorithm=algorithm, batch_size=batch_size, batch_policy=policy)
    if isinstance(spec, LibrarySpec):
        filled |= _fingerprint(spec, saved)
        default = "auto" if spec.make_on_demand else "none"
        filled["transform"] = spec.transform or getattr(saved, "transform", None) or default
    return dataclasses.replace(spec, **filled)


def _resumed_spec(spec: CampaignSpec) -> Optional[CampaignSpec]:
    """The specification of the campaign ``--resume`` continues, or ``propose`` (which always
    continues its directory's); ``None`` when not resuming or when it has no ``run.json``,
    which the session reports."""
    path = Path(spec.logdir) / "run.json"
    if not ((spec.resume or isinstance(spec, ProposeSpec)) and path.is_file()):
        return None
    saved = read_record(path).spec
    if type(saved) is not type(spec):
        raise UsageError(
            f"{'--logdir' if isinstance(spec, ProposeSpec) else '--resume'}: {spec.logdir} "
            f"holds a campaign of {saved.command}, not of {spec.command}"
        )
    return saved


def _fingerprint(spec: LibrarySpec, saved: Optional[CampaignSpec]) -> dict[str, Any]:
    """A library campaign's fingerprint settings, given or resolved (:func:`resolved`)."""
    defaults: dict[str, Any] = dict(fingerprint=DEFAULT_FINGERPRINT, radius=DEFAULT_RADIUS)
    defaults["fingerprint_width"] = DEFAULT_WIDTH
    if isinstance(saved, LibrarySpec):
        defaults = {name: getattr(saved, name) for name in defaults}
    elif saved is None:
        from ...stores.store import LibraryStore, is_store

        if is_store(spec.library):
            stored = LibraryStore(spec.library).fingerprint
            defaults = dict(fingerprint=stored["kind"], radius=stored["radius"])
            defaults["fingerprint_width"] = stored["size"]
    return {
        name: default if getattr(spec, name) is None else getattr(spec, name)
        for name, default in defaults.items()
    }
