"""The settings whose default depends on the campaign, resolved by :func:`resolved` into a new
specification (nothing is mutated): the rule, the batch policy and size, and ``screen``'s
fingerprint, each the user's where given, else a resumed campaign's own, else the campaign's."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

from ..errors import UsageError
from ..problems.molecules import DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH
from .run_record import read_record
from .screen_specification import LibrarySpec, ProposeSpec, ScreenSpec
from .specification import CampaignSpec, Spec

PROPOSALS_PER_WORKER = {("gp-bucb", "fixed"): 4}
"""Points an acquisition proposes per worker in an asynchronous ``screen`` campaign, by rule
and batch policy (2 for the others). Measured on 20,000 molecules with 32 workers of 1 s
(``benchmarks/asynchronous.py``, ``docs/screening.md``): batch Thompson sampling's acquisition of
32 points took 0.9-1.4 s, so the proposals in hand ran out and 13 % of the workers' time was spent
waiting, 0.1 % with 64; ``gp-bucb``'s costs mostly the batch-start marginals of every molecule,
so 128 points an acquisition kept the workers 98.2 % busy where 64 kept them 92-96 %."""


def resolved(spec: Spec) -> Spec:
    """``spec`` with every setting that depends on the campaign filled in where not given:

    - ``algorithm``: a resumed campaign's own, else the command's (``gp-bucb`` over at most
      :data:`~.screen_specification.DEFAULT_DICTIONARY` evaluated molecules, in process, on
      a library store, on its scoring actors and in asynchronous campaigns alike);
    - ``batch_policy``: a resumed campaign's own (``adaptive`` for one logged before it existed),
      else the command's; ``adaptive`` for the MINI rules (their epochs are their batches) and
      for the other rules in asynchronous campaigns (workers take points as they free), except
      ``gp-bucb``, whose fixed batches hallucinate the points in flight in one call;
    - ``batch_size``: the command's; with ``--workers N --asynchronous``
      :data:`PROPOSALS_PER_WORKER` times N (2N for most rules; 4N for ``gp-bucb``'s fixed
      batches, whose acquisitions cost mostly scoring every candidate once);
    - ``screen``'s ``fingerprint``, ``radius``, ``fingerprint_width``: a resumed campaign's own,
      a library store's, else
      :data:`~trieste_scalable.problems.molecules.DEFAULT_FINGERPRINT` (``featurise``'s too).

    :raise UsageError: If ``--resume`` names a campaign of another command, or a library store's
        manifest cannot be read; or on a combination the filled-in values make bad.
    :raise CampaignError: If a resumed campaign's ``run.json`` is damaged.
    """
    saved = _resumed_spec(spec)
    algorithm = spec.algorithm or (saved.algorithm if saved else None) or spec.default_algorithm
    policy = spec.default_batch_policy
    if algorithm.startswith("mini") or (spec.runs_asynchronously and algorithm != "gp-bucb"):
        policy = "adaptive"
    if saved is not None:
        policy = saved.batch_policy or "adaptive"
    policy = spec.batch_policy or policy
    batch_size = spec.batch_size or spec.default_batch_size
    if spec.batch_size is None and isinstance(spec, ScreenSpec) and spec.runs_asynchronously:
        per_worker = PROPOSALS_PER_WORKER.get((algorithm, policy), 2)
        batch_size = per_worker * int(spec.workers or 0)
    filled: dict[str, Any] = dict(algorithm=algorithm, batch_size=batch_size, batch_policy=policy)
    if isinstance(spec, LibrarySpec):
        filled |= _fingerprint(spec, saved)
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
        from ..problems.store import LibraryStore, is_store

        if is_store(spec.library):
            try:
                stored = LibraryStore(spec.library).fingerprint
            except ValueError as error:  # the library: a usage error, as in screening_problem
                raise UsageError(str(error)) from error
            defaults = dict(fingerprint=stored["kind"], radius=stored["radius"])
            defaults["fingerprint_width"] = stored["size"]
    return {
        name: default if getattr(spec, name) is None else getattr(spec, name)
        for name, default in defaults.items()
    }
