"""What a campaign needs of the candidates it searches, whatever holds them: a synthetic problem
(:class:`~.synthetic.DiscreteProblem`), an enumerated library
(:class:`~.screening.ScreeningProblem`) or a make-on-demand space
(:class:`~trieste_scalable.spaces.problem.MakeOnDemandProblem`, which inherits from neither, so
refuses nothing): what a campaign may do with one is said by its capabilities
(:attr:`CampaignProblem.values_known`, :class:`KnowsValues`, :class:`MoleculeProblem`)."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Protocol, Sequence, runtime_checkable

import numpy as np
import tensorflow as tf


@runtime_checkable
class CampaignProblem(Protocol):
    """The candidates of a campaign by index, as the engine, the log and the reports see them."""

    @property
    def name(self) -> str:
        """Short name (reports' titles)."""

    @property
    def points(self) -> Any:
        """Candidates [A, D] by index (``points[ids]``, ``len(points)``, ``shape``)."""

    @property
    def values(self) -> np.ndarray:
        """Known values [A] (Trieste's, minimised; NaN where unknown), or [0] if none."""

    @property
    def higher_is_better(self) -> bool:
        """The user's direction (:meth:`user_value`)."""

    @property
    def search_space(self) -> Any:
        """The Trieste search space of the candidates."""

    @property
    def values_known(self) -> bool:
        """Whether any candidate's value is known up front, so recall and regret can be
        scored (a capability: reports show them only then)."""

    def indices(self, query_points: tf.Tensor | np.ndarray) -> np.ndarray:
        """Candidate index of each query point [N]; raises ``ValueError`` on a non-candidate."""

    def initial_ids(self, rng: np.random.Generator, num: int) -> np.ndarray:
        """``num`` distinct candidates: a campaign's random initial design [num]."""

    def user_value(self, value: float) -> float:
        """A value (Trieste's, minimised) in the user's units and direction."""

    def content_hash(self, legacy: bool = False) -> str:
        """SHA-256 of what a resumed campaign must find unchanged."""

    def identity_columns(self) -> list[str]:
        """Names of the log columns that identify a candidate."""

    def identity(self, index: int) -> list[str]:
        """The identifying columns of candidate ``index`` as logged."""

    def identity_matches(self, index: np.ndarray, logged: list[list[str]]) -> np.ndarray:
        """Whether each logged identity [N][C] is that of candidate ``index`` [N]."""

    def metrics(self, evaluated: np.ndarray) -> dict[str, float]:
        """Progress measures of the evaluated candidate indices (none where truth is unknown)."""


@runtime_checkable
class KnowsValues(CampaignProblem, Protocol):
    """A problem evaluated in this process from its known values, with noise (a capability: a
    campaign over any other needs an oracle)."""

    def objective(self, seed: int) -> Callable[[int], float]:
        """The noisy value of a candidate by its index; its noise from its own generator."""


@runtime_checkable
class MoleculeProblem(CampaignProblem, Protocol):
    """A problem whose candidates are molecules (a capability: reports show their SMILES, names
    and pictures; ``propose`` and ``tell`` run over it)."""

    @property
    def labels(self) -> Sequence[str]:
        """SMILES of each candidate [A]."""

    @property
    def num_molecules(self) -> int:
        """Molecules the candidates stand for."""

    @property
    def takes_extra_molecules(self) -> bool:
        """Whether molecules outside the candidates can be told to its model (``--extra``)."""

    def candidate_name(self, index: int) -> str:
        """A name the reports show beside the candidate's SMILES ("" if none)."""

    def proposed_index(self, rows: Sequence[Mapping[str, str]]) -> list[Optional[int]]:
        """The candidate each row of a batch file names (its cells by lower-case column: its
        :meth:`~.CampaignProblem.identity_columns` among them), found without enumerating
        anything; ``None`` where none is found."""
