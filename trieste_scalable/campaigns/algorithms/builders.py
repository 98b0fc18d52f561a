"""The model and rule each algorithm of the registry builds (:func:`build`), one builder per
family (:data:`BUILDERS`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import gpflow
import tensorflow as tf
from trieste.acquisition.rule import AcquisitionRule
from trieste.data import Dataset

from ... import acquisition
from ...acquisition import BatchThompsonSampling, ConfidenceWidth, ExplorationShare
from ...acquisition.random_search import RandomRule
from ...models import (
    AdaptiveSVGP,
    ExactDictionary,
    NystromGPR,
    PivotedCholeskyDictionary,
    ReplicatedGPR,
    RidgeLeverageSampler,
)
from ...models.builders import RECOMMENDED_VARIANCE_OPTIMISM
from ...models.no_model import NoModel
from ...sampling.scoring import RemoteSampleScoring
from ...stores.sign_store import LibrarySignStore
from .registry import Algorithm
from .registry import algorithm as entry_of


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    """Everything :func:`build` takes beside the algorithm and the data (its docstring)."""

    lengthscale: float = 0.3
    kernel_variance: float = 0.1
    noise_variance: float
    width: ConfidenceWidth
    batch_size: int
    max_batch_size: Optional[int]
    fit_hyperparameters: bool
    seed: int
    allow_repeats: bool = True
    kernel: Optional[gpflow.kernels.Kernel] = None
    screening: bool = False
    num_inducing: Optional[int] = None
    selector: str = "kmeans"
    budget: Optional[int] = None
    redraw_features_every: Optional[int] = None
    ratio_threshold: Optional[float] = None
    regulariser: Optional[float] = None
    keep_sign_features: bool = True
    remote_scoring: Optional[RemoteSampleScoring] = None
    exploration_rate: Optional[float] = None
    variance_optimism: Optional[float] = None
    fixed_batches: bool = False
    dictionary_size: Optional[int] = None
    outcome_transform: str = "none"
    packed_width: Optional[int] = None

    @property
    def the_kernel(self) -> gpflow.kernels.Kernel:
        """``kernel``, by default squared exponential with ``lengthscale`` and
        ``kernel_variance``."""
        if self.kernel is not None:
            return self.kernel
        return gpflow.kernels.SquaredExponential(
            variance=self.kernel_variance, lengthscales=self.lengthscale
        )

    @property
    def remedies(self) -> bool:
        """UCB rules fitted on noisy data keep exploring (``docs/fitting.md``); screening never
        repeats a molecule, so never there."""
        return self.fit_hyperparameters and not self.screening

    def ucb_fit(self) -> dict[str, Any]:
        """The fitting options of the UCB-family models (variance optimism with the remedies)
        and the outcome transform."""
        fit: dict[str, Any] = dict(
            fit_hyperparameters=self.fit_hyperparameters, outcome_transform=self.outcome_transform
        )
        if self.remedies:
            optimism = self.variance_optimism
            fit["variance_optimism"] = (
                RECOMMENDED_VARIANCE_OPTIMISM if optimism is None else optimism
            )
        return fit

    def shared(self, rule: AcquisitionRule) -> AcquisitionRule:
        """``rule`` with a decaying share of random points where the remedies apply."""
        rate = 3.0 if self.exploration_rate is None else self.exploration_rate
        if self.remedies and rate != 0:
            return ExplorationShare(rule, rate=rate, seed=self.seed)
        return rule


Builder = Callable[[Algorithm, Dataset, BuildOptions], tuple[Any, AcquisitionRule]]
BUILDERS: dict[str, Builder] = {}
"""The builder of each :data:`~.registry.Family`: the registry's entry, the data and the
options to a model and a rule."""


def builds(family: str) -> Callable[[Builder], Builder]:
    """Register the decorated function as ``family``'s builder."""

    def register(builder: Builder) -> Builder:
        BUILDERS[family] = builder
        return builder

    return register


def build(algorithm: str, data: Dataset, **options: Any) -> tuple[Any, AcquisitionRule]:
    """The model and rule for ``algorithm`` (a name of :data:`~.registry.ALGORITHMS`), by its
    family's builder (:data:`BUILDERS`).

    :param kernel: The GP kernel; default squared exponential with ``lengthscale`` and
        ``kernel_variance``.
    :param screening: Never propose an evaluated candidate, nor one twice in a batch (every
        rule): screening evaluates each molecule once.
    :param num_inducing: Inducing points of ``ts``'s SVGP; ``selector`` picks them. Default
        1,000 when screening (the recall gained by 2,000 did not pay for its cost a batch;
        measured: ``benchmarks/results/design_measurements.md``), else 500.
    :param budget: Evaluations left; bounds the MINI rules' epochs.
    :param redraw_features_every: ``ts``'s cached sign features are redrawn every this many
        batches (see ``BatchThompsonSampling``).
    :param ratio_threshold: The stopping threshold of the batch rules and the MINI rules'
        epochs (default the rules' 2; ignored by ``bkb``, ``ts`` and ``random``).
    :param regulariser: The papers' :math:`\\lambda` of ``bbkb``, ``bbkb-local``, ``bkb`` and
        ``gp-bucb`` (default the rules' ``"kernel_variance"``; ignored by the others).
    :param keep_sign_features: ``ts`` when screening: keep the library's sign features in the
        cache directory (:class:`~.LibrarySignStore`).
    :param remote_scoring: Scores a library store's rows elsewhere (its shards on Ray actors,
        :class:`~trieste_scalable.cluster.scoring_actors.ScoringActors`): ``ts``'s samples, or
        the batch-start marginals of ``gp-bucb``, ``bbkb``, ``bbkb-local`` and ``bkb``; the
        picks are those of scoring in this process.
    :param exploration_rate: With ``fit_hyperparameters``, the UCB-family rules (all but ``ts``
        and ``random``) get a decaying share of random points so the fits stay honest
        (``ExplorationShare`` with this rate; default 3, 0 for none; never
        when screening, which evaluates each molecule once).
    :param variance_optimism: With ``fit_hyperparameters``, the UCB-family rules' models raise
        the fitted signal variance this many times the fit's noise share Laplace standard
        deviations (default 2, 0 for none; never when screening: ``docs/fitting.md``).
    :param fixed_batches: The adaptive rules (``bbkb``, ``bbkb-local``, ``gp-bucb``) propose
        ``max_batch_size`` points every batch, their stopping rule only logged; the fixed-batch
        rules (``ts``, ``random``) always do; ``bkb`` has batches of one.
    :param outcome_transform: The models' transform of the observations
        (:class:`~trieste_scalable.models.base.ReplicatedGPBase`; default ``"none"``).
    :param dictionary_size: ``gp-bucb``'s GP holds at most this many evaluated points: exact
        while there are no more, then a Nyström GP over a dictionary of this size drawn by
        pivoted Cholesky (:class:`~trieste_scalable.models.PivotedCholeskyDictionary`); default
        none (always exact).
    :param packed_width: The data's query points are packed bits of this many columns
        (:class:`~trieste_scalable.spaces.featurised.FeatureRows` with ``packed``), which the
        model keeps so; only for the algorithms whose entry ``reads_packed_inputs``.
    :raise ValueError: On an unknown algorithm, ``remote_scoring`` for a rule not scored on
        actors, ``fixed_batches`` for a rule whose epochs are its batches, or
        ``packed_width`` for one whose model reads dense rows.
    """
    entry = entry_of(algorithm)
    settings = BuildOptions(**options)
    if settings.fixed_batches and "fixed" not in entry.batch_policies:
        raise ValueError(f"{algorithm} cannot follow fixed batches: its epochs set its batches")
    if settings.remote_scoring is not None and not entry.scored_on_actors:
        raise ValueError(f"{algorithm} scores no library elsewhere: it takes no remote_scoring")
    if settings.packed_width is not None and not entry.reads_packed_inputs:
        raise ValueError(f"{algorithm}'s model reads dense rows: it takes no packed_width")
    return BUILDERS[entry.family](entry, data, settings)


@builds("uniform")
def _random(entry: Algorithm, data: Dataset, options: BuildOptions) -> tuple[Any, AcquisitionRule]:
    rule = RandomRule(options.batch_size, options.seed, exclude_evaluated=options.screening)
    return NoModel(), rule


@builds("thompson")
def _thompson(
    entry: Algorithm, data: Dataset, options: BuildOptions
) -> tuple[Any, AcquisitionRule]:
    inducing = options.num_inducing or entry.default_inducing(library=options.screening)
    if inducing is None:
        raise ValueError(f"{entry.name} has no default number of inducing points")
    model = AdaptiveSVGP(
        options.the_kernel,
        options.noise_variance,
        data,
        inducing=inducing,
        selector=options.selector,
        seed=options.seed,
        fit_hyperparameters=options.fit_hyperparameters,
        outcome_transform=options.outcome_transform,
    )
    screening = options.screening
    thompson = BatchThompsonSampling(
        options.batch_size,
        exclude_evaluated=screening,
        seed=options.seed,
        # screening scores whole libraries: float32 products (see BatchThompsonSampling)
        scoring_dtype=tf.float32 if screening else None,
        redraw_features_every=options.redraw_features_every,
        sign_store=LibrarySignStore() if screening and options.keep_sign_features else None,
        remote_scoring=options.remote_scoring,
    )
    return model, thompson


@builds("epochs")
def _epochs(entry: Algorithm, data: Dataset, options: BuildOptions) -> tuple[Any, AcquisitionRule]:
    rule_type = getattr(acquisition, entry.rule)
    settings: dict[str, Any] = dict(
        max_batch_size=options.max_batch_size,
        budget=options.budget,
        exclude_evaluated=options.screening,
    )
    if entry.confidence_width:
        width = options.width
        settings["width"] = width if width.mode == "constant" else "theory"
    rule = rule_type(options.ratio_threshold or 2.0, **settings)
    model = ReplicatedGPR(options.the_kernel, options.noise_variance, data, **options.ucb_fit())
    return model, options.shared(rule)


@builds("hallucinated")
def _hallucinated(
    entry: Algorithm, data: Dataset, options: BuildOptions
) -> tuple[Any, AcquisitionRule]:
    ucb: dict[str, Any] = dict(
        width=options.width,
        seed=options.seed,
        exclude_evaluated=options.screening,
        remote_marginals=options.remote_scoring,
        regulariser="kernel_variance" if options.regulariser is None else options.regulariser,
    )
    if entry.stopping_threshold:  # adaptive batches (a fixed size, the stopping rule logged)
        fixed = options.fixed_batches
        ucb |= dict(
            max_batch_size=options.batch_size if fixed else options.max_batch_size,
            allow_repeats=options.allow_repeats and not options.screening,
            ratio_threshold=options.ratio_threshold or 2.0,
            fixed_batch_size=fixed,
        )
    rule = getattr(acquisition, entry.rule)(**dict(entry.rule_options), **ucb)
    dictionary: Any = RidgeLeverageSampler(2.0, seed=options.seed)
    if entry.model_size == "dictionary":
        dictionary = ExactDictionary()
        if options.dictionary_size is not None:
            dictionary = PivotedCholeskyDictionary(options.dictionary_size, seed=options.seed)
    model = NystromGPR(
        options.the_kernel,
        options.noise_variance,
        data,
        dictionary=dictionary,
        packed_width=options.packed_width,
        **options.ucb_fit(),
    )
    return model, options.shared(rule)
