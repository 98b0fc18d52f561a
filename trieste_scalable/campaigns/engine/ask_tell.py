"""The one adapter to Trieste's ``AskTellOptimizer``'s private state (:data:`PRIVATE_ATTRIBUTES`,
pinned by ``tests/unit/campaigns/test_engine.py``): setting a rule's state, which
it has no setter for (:func:`set_rule_state`), and an ``ask`` that writes per-dimension
query-point summaries only where they mean something (:class:`CampaignAskTell`).

Trieste's ``ask`` writes one TensorBoard histogram per input dimension of the query points
(``trieste.bayesian_optimizer.write_summary_query_points``), each from an eager slice of the batch:
on 2,048-wide fingerprints, 2,048 histograms an acquisition (1,000+ tags and megabytes of events in
a few batches, which TensorBoard cannot show usefully), and the slicing alone took about half of a
small acquisition (measured: ``benchmarks/results/design_measurements.md``). A filter on the names
(``trieste.logging.set_summary_filter``) drops the events but not the slicing. Above
:data:`MAX_SUMMARISED_DIMENSION` input dimensions this ``ask`` writes the query points' pairwise
distances and the acquisition's wall-clock time, as Trieste does; at or below it, Trieste's own
summaries.
"""

from __future__ import annotations

from typing import Any

from scipy.spatial.distance import pdist
from trieste import logging
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.types import TensorType
from trieste.utils import Timer

MAX_SUMMARISED_DIMENSION = 16
"""The widest query points whose per-dimension histograms are written."""
PRIVATE_ATTRIBUTES = (
    "_acquisition_state",
    "_acquisition_record",
    "_acquisition_rule",
    "_search_space",
    "_models",
    "_filtered_datasets",
)
"""The attributes of Trieste's ``AskTellOptimizer`` this module reads or sets."""


def set_rule_state(ask_tell: AskTellOptimizer, state: Any) -> None:
    """Give the rule of ``ask_tell`` the state ``state`` (one restored from a campaign's
    records, or with failed points moved out of its pending ones)."""
    ask_tell._acquisition_state = state  # type: ignore[attr-defined]


class CampaignAskTell(AskTellOptimizer):
    """:class:`~trieste.ask_tell_optimization.AskTellOptimizer`; module docstring."""

    def ask(self) -> TensorType:
        """Trieste's ``ask``: the rule's next points [B, D], its state kept."""
        if self._search_space.dimension <= MAX_SUMMARISED_DIMENSION:
            return super().ask()
        with Timer() as timer:
            points_or_stateful = self._acquisition_rule.acquire(
                self._search_space, self._models, datasets=self._filtered_datasets
            )
        if callable(points_or_stateful):  # a stateful rule, as in Trieste's ask
            self._acquisition_state, points = points_or_stateful(self._acquisition_state)
            self._acquisition_record = self._acquisition_state
        else:
            points = points_or_stateful
        writer = logging.get_tensorboard_writer()
        if writer:
            with writer.as_default(step=logging.get_step_number()):
                logging.histogram("query_points/euclidean_distances", lambda: pdist(points))
                logging.scalar("wallclock/query_point_generation", timer.time)
        return points
