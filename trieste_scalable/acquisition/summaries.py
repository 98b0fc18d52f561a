"""TensorBoard scalars of the rules, through ``trieste.logging``."""

from __future__ import annotations

from typing import Mapping

from trieste import logging


def write_scalars(prefix: str, stats: Mapping[str, float]) -> None:
    """Log ``prefix/name`` for each statistic at Trieste's current step, if a writer is set.

    Trieste's loop only opens the writer's context around its own summaries, so a rule opens it
    itself (as Trieste's ``EfficientGlobalOptimization`` does).
    """
    writer = logging.get_tensorboard_writer()
    if writer is None:
        return
    with writer.as_default(step=logging.get_step_number()):
        for name, value in stats.items():
            logging.scalar(f"{prefix}/{name}", value)


class LogsStatistics:
    """A rule that keeps its last step's statistics (``last_statistics``) and logs them under
    its ``_name``."""

    _name = "rule"
    last_statistics: Mapping[str, float] = {}

    def _log(self, stats: Mapping[str, float]) -> None:
        self.last_statistics = dict(stats)
        write_scalars(self._name, stats)
