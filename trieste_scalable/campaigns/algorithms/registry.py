"""The campaigns' algorithms as data: one frozen :class:`Algorithm` entry per name the command
line offers (``--algorithm``), holding its family, its defaults and what it can do. Every check
of a setting against a rule, every default that depends on the rule, every help text that lists
rules and the memory estimate read an entry here; :func:`~.builders.build` turns an entry's
family into a model and a rule (one builder per family). No TensorFlow: the command line parses
its arguments with this alone.

Adding a rule is one entry here and, for a new family, one builder in :mod:`.algorithms`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

Family = Literal["hallucinated", "epochs", "thompson", "uniform"]
"""How a rule picks: greedy batches by hallucinated variance updates over a Nyström GP (BBKB,
BKB, GP-BUCB), epochs of one candidate repeated over a replicated exact GP (MINI-META), batch
Thompson samples of an SVGP, or uniform random draws."""
ModelSize = Literal["evaluations", "dictionary", "inducing", "none"]
"""What sets the size m of the rule's model (:mod:`.memory_estimate`): every evaluation (an
exact GP), ``--inducing`` as a dictionary (an exact GP until it is exceeded), ``--inducing`` as
inducing points, or no model."""


@dataclass(frozen=True)
class Algorithm:
    """One algorithm of the campaigns.

    :ivar name: Its ``--algorithm`` name.
    :ivar family: How it picks (:data:`Family`); its builder's key.
    :ivar summary: One line for help texts and docs.
    :ivar rule: Its rule's class in :mod:`trieste_scalable.acquisition`, and
        ``rule_options`` what its builder passes it beside the campaign's settings.
    :ivar confidence_width: It takes the campaign's confidence width (``--width``).
    :ivar batch_policies: The batch policies it follows (``--batch-policy``); its epochs set the
        batches of a rule with ``("adaptive",)`` only.
    :ivar stopping_threshold: It ends batches or epochs by a threshold C (``--ratio-threshold``).
    :ivar scored_on_actors: ``--scoring-actors`` scores a library store for it.
    :ivar adaptive_when_asynchronous: Its batches are adaptive in asynchronous campaigns
        (workers take points as they free); else the command's default policy holds (a rule
        whose fixed batches hallucinate the points in flight in one call).
    :ivar proposals_per_worker: Points an asynchronous acquisition proposes per worker, by batch
        policy (2 where not listed; GP-BUCB's fixed batches cost mostly scoring every candidate
        once, so it proposes more at once: ``docs/asynchronous.md``).
    :ivar model_size: What sets its model's size (:data:`ModelSize`).
    :ivar inducing: Its ``--inducing`` default where the setting is its model's size: over a
        synthetic problem and over a library.
    :ivar screening_noise_share: The noise variance a noise-free screen's model assumes, as a
        share of the kernel variance.
    :ivar evaluates_once: It never evaluates a candidate twice, even outside screening.
    """

    name: str
    family: Family
    summary: str
    rule: str
    rule_options: tuple[tuple[str, Any], ...] = ()
    confidence_width: bool = False
    batch_policies: tuple[str, ...] = ("fixed",)
    stopping_threshold: bool = False
    scored_on_actors: bool = False
    adaptive_when_asynchronous: bool = True
    proposals_per_worker: tuple[tuple[str, int], ...] = ()
    model_size: ModelSize = "evaluations"
    inducing: tuple[int | None, int | None] = (None, None)
    screening_noise_share: float = 1.0
    evaluates_once: bool = False

    @property
    def reads_packed_inputs(self) -> bool:
        """Its model keeps evaluated fingerprints as packed bits (``packed_width``: the Nyström
        GP of its family)."""
        return self.family == "hallucinated"

    @property
    def hallucinated_batches(self) -> bool:
        """It grows batches by hallucinated variances (its family), so the papers' regulariser
        (``--regulariser``) is its."""
        return self.family == "hallucinated"

    @property
    def epochs(self) -> bool:
        """Its batches are epochs of one candidate repeated (its family)."""
        return self.family == "epochs"

    def per_worker(self, policy: str) -> int:
        """Points an asynchronous acquisition proposes per worker under ``policy``."""
        return dict(self.proposals_per_worker).get(policy, 2)

    def default_inducing(self, library: bool) -> int | None:
        """Its ``--inducing`` default over a library or a synthetic problem (``None``: the
        setting does not size its model)."""
        return self.inducing[1 if library else 0]


_UCB: dict[str, Any] = dict(scored_on_actors=True, confidence_width=True)
_ADAPTIVE: dict[str, Any] = dict(
    _UCB, batch_policies=("adaptive", "fixed"), stopping_threshold=True
)
_MINI: dict[str, Any] = dict(batch_policies=("adaptive",), stopping_threshold=True)
ALGORITHMS: dict[str, Algorithm] = {
    entry.name: entry
    for entry in (
        Algorithm(
            "bbkb",
            "hallucinated",
            "BBKB, the Global stopping rule",
            "BBKB",
            (("stopping", "global"),),
            **_ADAPTIVE,
        ),
        Algorithm(
            "bbkb-local",
            "hallucinated",
            "BBKB, the GlobalLocal stopping rule",
            "BBKB",
            (("stopping", "global_local"),),
            **_ADAPTIVE,
        ),
        Algorithm("bkb", "hallucinated", "BKB: one point a batch", "BKB", **_UCB),
        Algorithm(
            "gp-bucb",
            "hallucinated",
            "GP-BUCB over an exact GP (a Nystrom dictionary past --inducing over a library)",
            "GPBUCB",
            **_ADAPTIVE,
            adaptive_when_asynchronous=False,
            proposals_per_worker=(("fixed", 4),),
            model_size="dictionary",
            inducing=(None, 1000),
        ),
        Algorithm(
            "ts",
            "thompson",
            "batch Thompson sampling from a sparse variational GP",
            "BatchThompsonSampling",
            scored_on_actors=True,
            model_size="inducing",
            inducing=(500, 1000),
            screening_noise_share=0.01,
        ),
        Algorithm(
            "mini-ucb",
            "epochs",
            "MINI-GP-UCB over a replicated exact GP",
            "MiniGPUCB",
            confidence_width=True,
            **_MINI,
        ),
        Algorithm(
            "mini-ei", "epochs", "MINI-GP-EI over a replicated exact GP", "MiniGPEI", **_MINI
        ),
        Algorithm(
            "random",
            "uniform",
            "uniform random candidates (the baseline)",
            "RandomRule",
            model_size="none",
            screening_noise_share=0.01,
            evaluates_once=True,
        ),
    )
}
"""Every algorithm, by name, in the order the command line lists them."""
SYNTHETIC_DEFAULT = "bbkb"
"""The rule of ``optimize`` where none is given."""
LIBRARY_DEFAULT = "gp-bucb"
"""The rule of ``screen`` and ``propose`` where none is given, at every scale
(``benchmarks/molpal_enamine.py``, ``benchmarks/library_scale_rules.py``;
``docs/screening.md``)."""


def algorithm(name: str) -> Algorithm:
    """The entry of ``name``.

    :raise ValueError: On an unknown name, listing the known ones.
    """
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}: choose from {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def names(where: Callable[[Algorithm], bool] = lambda entry: True) -> tuple[str, ...]:
    """The names of the entries ``where`` holds for, in :data:`ALGORITHMS`' order."""
    return tuple(name for name, entry in ALGORITHMS.items() if where(entry))


def listed(where: Callable[[Algorithm], bool]) -> str:
    """:func:`names` as a help text lists them (``"bbkb, bbkb-local, gp-bucb"``)."""
    return ", ".join(names(where))
