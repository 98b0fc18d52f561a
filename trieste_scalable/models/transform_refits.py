"""When a model refits its outcome transform: not at every update, but when the observations
have grown by a share since the last fit, or one is worse than those it was fitted to.

A refit changes every transformed observation, so a model conditions on all of them anew; kept,
the observations already told transform to the same values (bit for bit), and a Nystrom GP
adds only the new ones to its data's terms (:mod:`.summed_terms`). At 100,000 evaluations an
update then embeds a batch, not every evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..numerics.outcome_transforms import OutcomeTransform, fit_outcome_transform

REFIT_GROWTH = 1.05
"""The transform is refitted once there are this many times the observations it was fitted
to (as the Nystrom GP's dictionary is redrawn: ``PivotedCholeskyDictionary``'s growth)."""


@dataclass(frozen=True)
class FittedTransform:
    """An outcome transform and the observations it was fitted to [N, 1]."""

    transform: OutcomeTransform
    values: np.ndarray

    def reads(self, observations: np.ndarray) -> bool:
        """Whether this transform stands for ``observations`` [K, 1]: they are its values plus
        fewer than :data:`REFIT_GROWTH` times as many again, none worse (larger) than the worst
        of its values, where a log's gap to the worst would turn negative. Better values, a
        campaign's new bests, are read as every transform reads them: a power's and the
        identity's formula holds everywhere, a copula extends its end segments."""
        num = self.values.shape[0]
        return bool(
            observations.shape[0] < REFIT_GROWTH * num
            and np.array_equal(observations[:num], self.values)
            and observations.max() <= self.values.max()
        )


def fitted_transform(
    kind: str, previous: Optional[FittedTransform], observations: np.ndarray
) -> Optional[FittedTransform]:
    """The transform ``kind`` (``"none"``: none) for ``observations`` [K, 1]: ``previous`` while
    it :meth:`~FittedTransform.reads` them, else fitted to them
    (:func:`~trieste_scalable.numerics.outcome_transforms.fit_outcome_transform`)."""
    if kind == "none":
        return None
    if previous is not None and previous.reads(observations):
        return previous
    return FittedTransform(fit_outcome_transform(kind, observations), observations.copy())
