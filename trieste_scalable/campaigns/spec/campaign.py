"""The typed specification of a campaign: every setting of ``trieste-scalable screen``
(:class:`~.ScreenSpec`) and ``optimize`` (:class:`OptimizeSpec`) with its type, default and help
in one place. The command line's parser is generated from these fields, :func:`~.screen.screen`
builds a :class:`~.ScreenSpec` from its keyword arguments, and ``run.json`` stores and reloads one
(:mod:`.record`). ``screen``'s is in :mod:`~.spec.library`.

A specification is frozen and checked once, where it is built: types first
(:func:`~.spec.fields.checked_value`, a ``TypeError`` naming the setting), then ranges and
combinations (a :class:`~trieste_scalable.errors.UsageError` worded as the command line's).
Settings whose default depends on the campaign (the rule, the batch policy and size, the
fingerprint of a library store or a resumed campaign) are ``None`` until
:func:`~.spec.defaults.resolved` returns a new specification with them filled in::

    from trieste_scalable.campaigns.spec.campaign import ScreenSpec
    from trieste_scalable.campaigns.spec.defaults import resolved

    spec = resolved(ScreenSpec(library="library.smi", budget=200, batch_size=20))
    spec.algorithm, spec.fingerprint  # registry.LIBRARY_DEFAULT, 'atom-pair-counts'
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Optional, TypeVar, cast, get_type_hints

from ...errors import UsageError
from ...problems import PROBLEMS
from ..algorithms.registry import ALGORITHMS, SYNTHETIC_DEFAULT, Algorithm, listed
from .fields import checked_value, flags_of, range_error, setting

MIN_NOISE_VARIANCE = 1e-12  # models.base.NOISE_FLOOR (not imported: specifications load no TF)

Spec = TypeVar("Spec", bound="CampaignSpec")


@dataclass(frozen=True, kw_only=True)
class CampaignSpec:
    """The settings every campaign has: the rule and its batches, the budget, the directory.

    :cvar command: The command that runs it (``run.json``'s ``command``).
    :cvar default_algorithm: Its rule where none is given (:func:`~.spec.defaults.resolved`);
        likewise ``default_batch_size`` and ``default_batch_policy``. A setting's help may name
        them as ``{default_algorithm}``, filled in for each command (:meth:`help_of`).
    """

    command: ClassVar[str] = ""
    default_algorithm: ClassVar[str] = SYNTHETIC_DEFAULT
    default_batch_size: ClassVar[int] = 10
    default_batch_policy: ClassVar[str] = "adaptive"
    not_offered: ClassVar[tuple[str, ...]] = ()
    """Settings the command line does not offer (their defaults always apply)."""
    continues: ClassVar[bool] = False
    """Whether the command continues the campaign its directory holds, whose settings then
    apply where the command line gives none (``propose``)."""

    algorithm: Optional[str] = setting(
        None,
        "default {default_algorithm} (a resumed campaign's own)",
        choices=tuple(ALGORITHMS),
    )
    budget: int = setting(300, "evaluations after the initial design", positive=True)
    initial: int = setting(10, "size of the random initial design", positive=True)
    batch_size: Optional[int] = setting(
        None,
        "for fixed-batch rules (default {default_batch_size}; with --asynchronous, how many "
        "points are proposed at once: default "
        + "; ".join(
            f"{entry.per_worker('fixed')} times the number of workers for {entry.name}'s fixed "
            "batches"
            for entry in ALGORITHMS.values()
            if entry.per_worker("fixed") != 2
        )
        + ", twice for the other rules; both doubled over a --reaction's space)",
        positive=True,
    )
    max_batch_size: Optional[int] = setting(
        None,
        "cap adaptive batches (default the batch size; with --asynchronous, twice the number "
        "of workers)",
        positive=True,
    )
    width: str = setting(
        "constant",
        "the UCB rules' confidence width (constant: --beta)",
        choices=("theory", "reference_code", "constant"),
    )
    beta: float = setting(2.0, "the constant width's beta", positive=True)
    fit: bool = setting(False, "fit the hyperparameters")
    exploration_rate: Optional[float] = setting(
        None,
        "with --fit, UCB rules add about RATE*sqrt(n) random points in n evaluations so the fits "
        "stay honest (default 3; 0 for none; see docs/fitting.md)",
        least=0,
    )
    variance_optimism: Optional[float] = setting(
        None,
        "with --fit, UCB rules' models raise the fitted signal variance Z times the fit's noise "
        "share Laplace standard deviations (default 2; 0 for none; see docs/fitting.md)",
        least=0,
    )
    inducing: Optional[int] = setting(
        None,
        "; ".join(
            f"{entry.name}: the SVGP's inducing points (default {entry.default_inducing(True)} "
            f"in screen, {entry.default_inducing(False)} in optimize)"
            for entry in ALGORITHMS.values()
            if entry.model_size == "inducing"
        )
        + "; "
        + "; ".join(
            f"{entry.name} in screen and propose: its GP's dictionary (default "
            f"{entry.default_inducing(True)}: exact while the molecules evaluated are no more, "
            "a Nystrom GP over that many after)"
            for entry in ALGORITHMS.values()
            if entry.model_size == "dictionary"
        ),
        positive=True,
    )
    ratio_threshold: Optional[float] = setting(
        None,
        f"{listed(lambda entry: entry.stopping_threshold)}: the stopping threshold C (default 2): "
        "how much hallucinated variance a batch, or the points in flight, may hold (with "
        "--workers N --asynchronous, about N + 1 keeps N novel candidates in flight, 2N + 1 "
        "also proposes ahead)",
    )
    regulariser: Optional[float] = setting(
        None,
        f"{listed(lambda entry: entry.hallucinated_batches)}: the papers' lambda, which sets how "
        "long adaptive "
        "batches grow and the theory widths (default the larger of the noise and kernel "
        "variances, so batches keep growing at tiny noise; fixed batches ignore it: see "
        "docs/trieste.md)",
        positive=True,
    )
    batch_policy: Optional[str] = setting(
        None,
        f"{listed(lambda entry: len(entry.batch_policies) > 1)}: adaptive batches end by the "
        "stopping rule (capped at --max-batch-size); fixed ones have --batch-size points every "
        "time (a protocol such as MolPAL's), the last cut at the budget (default "
        "{default_batch_policy}, adaptive with --asynchronous except for "
        f"{listed(lambda entry: not entry.adaptive_when_asynchronous)}; a resumed campaign's "
        "own)",
        choices=("adaptive", "fixed"),
    )
    seed: int = setting(0, "the campaign's random seed (a non-negative integer)", least=0)
    logdir: str = setting("runs/optimize", "outputs and TensorBoard logs", path=True)
    resume: bool = setting(False, "continue the run in --logdir")
    quiet: bool = setting(False, "no progress bar")

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for spec_field in dataclasses.fields(self):
            value = checked_value(
                spec_field, getattr(self, spec_field.name), hints[spec_field.name]
            )
            object.__setattr__(self, spec_field.name, value)
            error = range_error(spec_field, value)
            if error:
                raise UsageError(error)
        self._check_ranges()

    @classmethod
    def of(cls: type[Spec], **settings: Any) -> Spec:
        """The specification of ``settings`` (the command's long options with underscores).

        :raise TypeError: On a setting the command does not have, or of the wrong type.
        :raise UsageError: On a bad value, naming the setting.
        """
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise TypeError(
                f"{cls.command}() has no setting {unknown[0]!r} (settings: {', '.join(known)})"
            )
        return cls(**settings)

    @classmethod
    def help_of(cls, name: str) -> str:
        """The help of setting ``name`` for this command (its defaults filled in)."""
        return str(_field(cls, name).metadata["help"]).format(
            default_algorithm=cls.default_algorithm,
            default_batch_size=cls.default_batch_size,
            default_batch_policy=cls.default_batch_policy,
        )

    @property
    def runs_asynchronously(self) -> bool:
        """Whether the campaign tells results and asks as they come, on workers."""
        return False

    @property
    def rule(self) -> str:
        """The rule's name: ``algorithm`` once resolved (:func:`~.spec.defaults.resolved`).

        :raise ValueError: If the specification was not resolved.
        """
        return _resolved(self.algorithm, "algorithm")

    @property
    def entry(self) -> Optional[Algorithm]:
        """The registry's entry of ``algorithm`` (:mod:`.registry`; ``None`` while it is not
        resolved, or unknown: the choices check names it)."""
        return ALGORITHMS.get(self.algorithm or "")

    @property
    def batch(self) -> int:
        """The batch size once resolved (:func:`~.spec.defaults.resolved`).

        :raise ValueError: If the specification was not resolved.
        """
        return _resolved(self.batch_size, "batch_size")

    def confidence_width(self) -> Any:
        """The UCB rules' :class:`~trieste_scalable.acquisition.ConfidenceWidth` (loads
        TensorFlow)."""
        from ...acquisition import ConfidenceWidth

        return ConfidenceWidth(cast(Any, self.width), beta=self.beta)

    def batch_cap(self) -> int:
        """``--max-batch-size``, by default the batch size (resolved here, not stored: the logged
        settings of earlier campaigns stay resumable)."""
        if self.max_batch_size is not None:
            return self.max_batch_size
        return self.batch

    def check_counts(self, num_candidates: int) -> None:
        """Refuse an initial design and budget larger than the candidates where the campaign
        never evaluates one twice (random search; every screening campaign).

        :raise UsageError: Naming the counts.
        """
        once = self.entry is not None and self.entry.evaluates_once
        if self.initial + self.budget > num_candidates and once:
            raise too_many(self.initial + self.budget, num_candidates)

    def _check_ranges(self) -> None:
        """:raise UsageError: On settings that do not go together (each value's own range, from
        its field (:func:`~.fields.range_error`), is checked first)."""
        for name in ("exploration_rate", "variance_optimism"):
            if getattr(self, name) is not None and not self.fit:
                raise UsageError(f"{flag(self, name)} applies to fitted models: add --fit")
        self._check_regulariser()
        epochs = self.entry is not None and self.entry.epochs
        if epochs and self.batch_policy == "fixed":
            raise UsageError(f"--batch-policy fixed: {self.algorithm}'s epochs set its batches")
        threshold = self.ratio_threshold
        if threshold is not None and not (threshold > 1 if epochs else threshold >= 1):
            bound = "above 1" if epochs else "at least 1"
            raise UsageError(f"--ratio-threshold must be {bound}, got {threshold}")

    def _check_regulariser(self) -> None:
        """:raise UsageError: On a regulariser given to a rule that has none."""
        if self.regulariser is None:
            return
        if self.entry is not None and not self.entry.hallucinated_batches:
            rules = listed(lambda entry: entry.hallucinated_batches)
            raise UsageError(f"--regulariser applies to {rules}, not {self.algorithm}")


@dataclass(frozen=True, kw_only=True)
class OptimizeSpec(CampaignSpec):
    """``trieste-scalable optimize``: a built-in synthetic problem and its GP's settings."""

    command: ClassVar[str] = "optimize"

    problem: str = setting("rkhs3", "a built-in noisy problem", choices=PROBLEMS)
    num_candidates: Optional[int] = setting(
        None, "the problem's candidates (its default)", positive=True
    )
    lengthscale: float = setting(0.3, "the kernel's lengthscale", positive=True)
    kernel_variance: float = setting(0.1, "the kernel's variance", positive=True)
    noise_variance: float = setting(0.01, "lambda")

    def _check_ranges(self) -> None:
        super()._check_ranges()
        if not (math.isfinite(self.noise_variance) and self.noise_variance > MIN_NOISE_VARIANCE):
            raise UsageError(
                f"--noise-variance must be finite and above {MIN_NOISE_VARIANCE:g} (the models' "
                f"floor), got {self.noise_variance}"
            )


def too_many(asked: int, num_candidates: int) -> UsageError:
    """The error for an initial design and budget of ``asked`` among ``num_candidates``."""
    return UsageError(
        f"--initial + --budget = {asked} exceeds the {num_candidates} candidates (screening "
        "never evaluates a candidate twice)"
    )


def flag(spec: CampaignSpec, name: str) -> str:
    """How errors name setting ``name`` of ``spec``: its first command-line flag."""
    return flags_of(_field(type(spec), name))[0]


def _field(cls: type[CampaignSpec], name: str) -> dataclasses.Field:
    """Setting ``name`` of the specification class ``cls``."""
    return next(f for f in dataclasses.fields(cls) if f.name == name)


Value = TypeVar("Value")


def _resolved(value: Optional[Value], name: str) -> Value:
    if value is None:
        raise ValueError(f"{name} is not resolved: pass the specification to resolved()")
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The declared type of each setting of ``cls`` (resolved once a class)."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]
