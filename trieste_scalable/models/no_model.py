"""The model of a rule that needs none (random search)."""

from __future__ import annotations

from typing import Optional

from trieste.data import Dataset
from trieste.models.interfaces import TrainableProbabilisticModel
from trieste.types import TensorType


class NoModel(TrainableProbabilisticModel):
    """The "model" of random search: it keeps nothing and predicts nothing, so the ask/tell loop
    costs random search no GP updates."""

    def predict(self, query_points: TensorType) -> tuple[TensorType, TensorType]:
        """:raise NotImplementedError: Always: random search has no model."""
        raise NotImplementedError("random search has no model to predict with")

    def sample(self, query_points: TensorType, num_samples: int) -> TensorType:
        """:raise NotImplementedError: Always: random search has no model."""
        raise NotImplementedError("random search has no model to sample from")

    def update(self, dataset: Dataset) -> None:
        return None

    def optimize(self, dataset: Dataset) -> None:
        return None

    def log(self, dataset: Optional[Dataset] = None) -> None:
        return None
