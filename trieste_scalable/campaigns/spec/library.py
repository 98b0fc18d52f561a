"""The specifications of the campaigns over a molecular library: the settings they share
(:class:`LibrarySpec`: the library, its fingerprint, the direction of its scores),
``trieste-scalable screen``'s (:class:`~.ScreenSpec`: an objective and where evaluations run) and
``propose``'s (:class:`ProposeSpec`: a prospective campaign, its scores told from a file), on
:class:`~.spec.campaign.CampaignSpec`'s settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, cast

from ...chemistry.molecules import (
    BUILTIN_LIBRARIES,
    DEFAULT_FINGERPRINT,
    DEFAULT_WIDTH,
    FINGERPRINTS,
    MOSES_FULL,
    OBJECTIVES,
)
from ...errors import UsageError
from ...problems.score_table import renamed
from ..algorithms.registry import LIBRARY_DEFAULT, listed
from .campaign import CampaignSpec, flag, too_many
from .fields import setting

MAKE_ON_DEMAND_FACTOR = 2
"""How many times more points an asynchronous acquisition proposes over a make-on-demand space
(``--reaction``) than over a library: its acquisitions cost mostly building their pool, whatever
the batch (``benchmarks/results/design_measurements.md``)."""

WORKERS = "evaluations on Ray workers (the [distributed] extra)"
MAKE_ON_DEMAND = "make-on-demand space (docs/screening.md)"


@dataclass(frozen=True, kw_only=True)
class LibrarySpec(CampaignSpec):
    """A campaign over a molecular library: the library, its fingerprint, the scores'
    direction; the rule and batches of ``screen``'s defaults."""

    default_algorithm: ClassVar[str] = LIBRARY_DEFAULT
    default_batch_size: ClassVar[int] = 100
    default_batch_policy: ClassVar[str] = "fixed"

    budget: int = setting(1000, "evaluations after the initial design", positive=True)
    initial: int = setting(100, "random initial molecules", positive=True)
    library: str = setting(
        "moses-20k",
        f"{' or '.join(BUILTIN_LIBRARIES)} (shipped), {MOSES_FULL} (1.9 M molecules; `pip "
        "install --no-deps molsets` first), a .smi/.csv file of SMILES or a library store",
        path=True,
    )
    lower_is_better: bool = setting(
        False,
        "the objective's scores are better when lower (e.g. docking energies); every report "
        "shows them as they are",
        flags=("--lower-is-better", "--minimize"),
    )
    fingerprint: Optional[str] = setting(
        None,
        f"default {DEFAULT_FINGERPRINT} (a library store: its own); bits and counts are "
        "Morgan's; counts get the MinMax kernel",
        choices=tuple(FINGERPRINTS),
    )
    radius: Optional[int] = setting(None, "Morgan fingerprints' radius (default 2)", least=1)
    fingerprint_width: Optional[int] = setting(
        None,
        f"fingerprint bits (default {DEFAULT_WIDTH}; counts take 3 bits a feature; --width is "
        "the UCB rules' confidence width)",
        least=8,
    )
    skip_invalid: bool = setting(False, "drop unparseable SMILES")
    transform: Optional[str] = setting(
        None,
        "the model's transform of the scores, fitted to those told and refitted as they grow: "
        "auto (the likeliest of none, log and power), log (of the gap to the worst: activity "
        "probabilities, hit rates), power (Yeo-Johnson), rank (a Gaussian copula); default auto "
        "over a make-on-demand space, none over a library (each measured best there)",
        choices=("none", "auto", "log", "power", "rank"),
    )
    reaction: Optional[str] = setting(
        None,
        "a make-on-demand space instead of --library: a reaction SMARTS with one reactant "
        "template per --reagents file; its products are made when asked for, never enumerated",
        group=MAKE_ON_DEMAND,
    )
    reagents: Optional[tuple[str, ...]] = setting(
        None,
        "with --reaction: one reagent file per template, in order (.smi lines 'SMILES name', or "
        "a CSV with smiles and name columns; gzipped or not)",
        group=MAKE_ON_DEMAND,
        path=True,
    )
    space: Optional[tuple[str, ...]] = setting(
        None,
        "a vendor's make-on-demand catalog instead of --library: synthon files, one or many "
        "reactions a file (one synthon a line: SMILES with link atoms [U] [Np] [Pu] [Am], id, "
        "component, reaction id; tab-, comma- or space-separated, gzipped or not); "
        "--reaction/--reagents's products join them",
        group=MAKE_ON_DEMAND,
        path=True,
    )
    keep_radicals: bool = setting(
        False,
        "keep reagents with unpaired electrons (their products are radicals: no compound to "
        "order; left out by default)",
        group=MAKE_ON_DEMAND,
    )
    pool_size: Optional[int] = setting(
        None, "products of lowest bound in each batch's pool", group=MAKE_ON_DEMAND, positive=True
    )
    pool_starts: Optional[int] = setting(
        None,
        "coordinate searches building a pool, half from the best products",
        group=MAKE_ON_DEMAND,
        positive=True,
    )
    pool_move_size: Optional[int] = setting(
        None,
        "reagents a move of a search scores (0: every usable one)",
        group=MAKE_ON_DEMAND,
        least=0,
    )
    pool_sweeps: Optional[int] = setting(
        None, "most sweeps of a search over the components", group=MAKE_ON_DEMAND, positive=True
    )
    pool_random_share: Optional[float] = setting(
        None,
        "random products added to a pool, a share of --pool-size",
        group=MAKE_ON_DEMAND,
        least=0,
    )
    pool_similar: Optional[int] = setting(
        None,
        "over synthon files, products similar to each of the 2 best that RDKit's fingerprint "
        "search scores for a pool (default 256; 0: none)",
        group=MAKE_ON_DEMAND,
        least=0,
    )

    @property
    def higher_is_better(self) -> bool:
        """The direction of the user's scores."""
        return not self.lower_is_better

    @property
    def make_on_demand(self) -> bool:
        """Whether the campaign searches a make-on-demand space (``--reaction``, ``--space``),
        whose products are made when asked for, never enumerated."""
        return bool(self.reaction or self.space)

    @property
    def proposals_factor(self) -> int:
        """How many times more points an asynchronous acquisition proposes than over an
        enumerated library: :data:`MAKE_ON_DEMAND_FACTOR` over a make-on-demand space."""
        return MAKE_ON_DEMAND_FACTOR if self.make_on_demand else 1

    def pool_options(self) -> dict[str, Any]:
        """The make-on-demand pool rule's settings given
        (:class:`~trieste_scalable.spaces.pool_rule.MakeOnDemandPoolRule`'s defaults for the
        rest), its search's bound the mean less ``--beta`` standard deviations."""
        given: dict[str, Any] = dict(
            pool_size=self.pool_size,
            num_starts=self.pool_starts,
            move_size=self.pool_move_size,
            max_sweeps=self.pool_sweeps,
            random_share=self.pool_random_share,
        )
        options = {name: value for name, value in given.items() if value is not None}
        if options.get("move_size") == 0:
            options["move_size"] = None  # every usable reagent
        return {**options, "beta": self.beta}

    @property
    def fingerprint_settings(self) -> tuple[str, int, int]:
        """The fingerprint's kind, radius and width once resolved
        (:func:`~.spec.defaults.resolved`).

        :raise ValueError: If the specification was not resolved.
        """
        settings = (self.fingerprint, self.radius, self.fingerprint_width)
        if None in settings:
            raise ValueError("fingerprint is not resolved: pass the specification to resolved()")
        return cast(tuple[str, int, int], settings)

    @property
    def dictionary_size(self) -> Optional[int]:
        """The dictionary of a rule whose exact GP turns to a Nyström GP past it (``--inducing``,
        default the registry's; ``None`` for the other rules)."""
        entry = self.entry
        if entry is None or entry.model_size != "dictionary":
            return None
        return self.inducing or entry.default_inducing(library=True)

    def dictionary_note(self) -> str:
        """What the campaign's log says of a dictionary rule's GP: exact throughout, or when it
        turns to a Nyström dictionary (empty for the other rules)."""
        size = self.dictionary_size
        if size is None:
            return ""
        if self.initial + self.budget <= size:
            return f"an exact GP throughout ({self.initial + self.budget} evaluations <= {size})"
        return (
            f"an exact GP up to {size} evaluations, then a Nystrom GP over {size} of them "
            "(pivoted Cholesky; --inducing sets the size)"
        )

    def check_counts(self, num_candidates: int) -> None:
        if self.initial + self.budget > num_candidates:
            raise too_many(self.initial + self.budget, num_candidates)

    def _check_make_on_demand(self) -> None:
        """:raise UsageError: On ``--reaction`` without ``--reagents`` or the other way, beside
        ``--library``, or with a rule that repeats candidates."""
        if self.reaction is not None and not self.reaction.strip():
            raise UsageError("--reaction is empty: give a reaction SMARTS, one template a file")
        if bool(self.reaction) != bool(self.reagents):
            given = "--reaction" if self.reaction else "--reagents"
            other = "--reagents" if self.reaction else "--reaction"
            raise UsageError(f"{given} needs {other}: a reaction and one reagent file a template")
        if self.keep_radicals and not self.reaction:
            raise UsageError("--keep-radicals keeps a make-on-demand space's reagents: it needs "
                             "--reaction")  # fmt: skip
        if self.pool_similar is not None and not self.space:
            raise UsageError(f"{flag(self, 'pool_similar')} searches synthon files: it needs "
                             "--space")  # fmt: skip
        pool = ("pool_size", "pool_starts", "pool_move_size", "pool_sweeps", "pool_random_share")
        for name in pool:
            value = getattr(self, name)
            if value is not None and not self.make_on_demand:
                raise UsageError(f"{flag(self, name)} sets the pool of a make-on-demand space: "
                                 "it needs --reaction or --space")  # fmt: skip
        if not self.make_on_demand:
            return
        given = "--space" if self.space else "--reaction"
        if self.library != "moses-20k":
            raise UsageError(f"--library and {given} both name the library: give one")
        if self.entry is not None and self.entry.epochs:
            raise UsageError(f"{given}: {self.algorithm} repeats candidates; pick another rule")
        if self.entry is not None and self.entry.model_size == "none":
            raise UsageError(
                f"{given}: {self.algorithm} has no model to build each batch's pool of "
                "products with; pick another rule"
            )

    def _check_ranges(self) -> None:
        self._check_make_on_demand()
        super()._check_ranges()


@dataclass(frozen=True, kw_only=True)
class ScreenSpec(LibrarySpec):
    """``trieste-scalable screen``: a molecular library, its objective and fingerprint, and
    where evaluations run (in this process, on Ray workers, or a store's shards on actors)."""

    command: ClassVar[str] = "screen"
    logdir: str = setting("runs/screen", "outputs and TensorBoard logs", path=True)
    objective: str = setting(
        "celecoxib-mpo",
        f"{', '.join(sorted(OBJECTIVES))} (computed for the library up front), "
        "table:FILE[:COLUMN] (your scores: a CSV/TSV with a SMILES column; the first numeric "
        "column by default), python:module:function (SMILES -> float) or dock:TARGET "
        "(dockstring; lower is better); in this process, or on Ray with --workers",
    )
    noise: float = setting(0.0, "observation noise std", least=0)
    workers: Optional[int] = setting(None, "evaluations in flight", group=WORKERS, positive=True)
    asynchronous: bool = setting(False, "tell results and ask as they come", group=WORKERS)
    ray_address: Optional[str] = setting(
        None, "a Ray cluster for --workers and --scoring-actors", group=WORKERS
    )
    timeout: Optional[float] = setting(None, "seconds per evaluation", group=WORKERS, positive=True)
    latency: Optional[float] = setting(
        None, "simulated mean delay per evaluation (s)", group=WORKERS, positive=True
    )
    scoring_actors: Optional[int] = setting(
        None, "a library store: score its shards on N Ray actors (the same picks)", positive=True
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "objective", renamed(self.objective))  # one name a table

    @property
    def higher_is_better(self) -> bool:
        """The direction of the user's scores (docking energies are lower-is-better)."""
        return not (self.lower_is_better or self.objective.startswith("dock:"))

    @property
    def scores_up_front(self) -> bool:
        """Whether the objective is scored for every candidate before the campaign (a built-in
        property or a score table of an enumerated library), else evaluated where asked."""
        from ...evaluation.oracles import is_table_objective

        return is_table_objective(self.objective) and not self.make_on_demand

    @property
    def runs_asynchronously(self) -> bool:
        return bool(self.asynchronous and self.workers)

    def batch_cap(self) -> int:
        """With ``--workers N --asynchronous`` 2N: an adaptive rule's acquisition costs mostly
        scoring every candidate, so one that also refills the proposals in hand for workers that
        free up during the next acquisition is cheaper than two (BBKB on 20,000 molecules, 32
        workers: 95.8 % of their time busy with 64, 90-94 % with 32); over a make-on-demand
        space :data:`MAKE_ON_DEMAND_FACTOR` times that. The stopping threshold still bounds the
        points in flight."""
        if self.max_batch_size is None and self.runs_asynchronously:
            assert self.workers is not None
            return 2 * self.workers * self.proposals_factor
        return super().batch_cap()

    def _check_ranges(self) -> None:
        """The screening settings first (the command line checked them first), then the
        common ones."""
        from ...stores.store import is_store

        if self.scoring_actors is not None:
            scored = self.algorithm is None or (
                self.entry is not None and self.entry.scored_on_actors
            )
            if not scored or not is_store(self.library):
                rules = listed(lambda entry: entry.scored_on_actors)
                raise UsageError(f"--scoring-actors scores {rules} over a library store")
        self._check_make_on_demand()
        if self.workers is None:
            used = [name for name in ("asynchronous", "timeout", "latency") if getattr(self, name)]
            if used:
                raise UsageError(f"--{used[0]} needs --workers")
            if self.ray_address and not self.scoring_actors:  # Ray's two users in a campaign
                raise UsageError("--ray-address needs --workers or --scoring-actors")
        if self.noise and (self.workers is not None or not self.scores_up_front):
            raise UsageError(
                "--noise simulates noise on an objective known up front (a built-in property or "
                "a score table) evaluated in this process, not with --workers or an oracle"
            )
        super()._check_ranges()

    def _check_make_on_demand(self) -> None:
        """Also: ``--reaction`` beside ``--scoring-actors`` or a score table."""
        from ...problems.score_table import is_score_table

        super()._check_make_on_demand()
        if not self.make_on_demand:
            return
        if self.scoring_actors is not None:
            raise UsageError("--scoring-actors scores a library store, not a make-on-demand space")
        if is_score_table(self.objective):
            raise UsageError(
                "a score table scores an enumerated library's molecules: a make-on-demand "
                "library needs an objective computed for each product (a built-in property, "
                "python:module:function or dock:TARGET)"
            )


@dataclass(frozen=True, kw_only=True)
class ProposeSpec(LibrarySpec):
    """``trieste-scalable propose``: a prospective campaign, whose scores come from outside (a
    lab, someone else's docking run) as files told to it (``trieste-scalable tell``;
    :mod:`~.prospective`). The settings that choose molecules are ``screen``'s; the directory is
    always continued when it holds the campaign (its settings apply where the command line
    gives none; one given that differs is refused), so ``--resume`` is not offered."""

    command: ClassVar[str] = "propose"
    not_offered: ClassVar[tuple[str, ...]] = ("resume",)
    continues: ClassVar[bool] = True

    logdir: str = setting(
        "runs/prospective",
        "the campaign directory: the batches to fill in, evaluations.csv, best_molecules.png, "
        "TensorBoard logs",
        path=True,
    )
