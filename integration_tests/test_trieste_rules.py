"""Trieste's own rules over our models, with the criterion and settings Trieste's integration tests
apply to its GPR and SVGP (``tests/integration/test_bayesian_optimization.py``, read, not copied):
on SimpleQuadratic at most 6 steps from 10 initial points, the best point within 5 % of a
minimiser and its value within 5 % of the minimum; on ScaledBranin (``slow``) Trieste's step
counts from 5 initial points, 0.5 %. The sparse variational model starts from 20 points on both,
as Trieste's SVGP does; the exact-GP stand-ins get the noise variance Trieste's GPR gets on these
noise-free problems (1e-5; 1e-3 under local penalisation). Each run also checks what Trieste
checks: the history reloads, a class-based acquisition function is traced no more than 4 times,
and a dill copy of it gives the same values.

Every rule of Trieste's list runs on every model with ``--runslow`` (by default each rule over
one model on SimpleQuadratic): each model supports every protocol those rules ask for
(``docs/trieste.md``), so no combination is refused.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

import dill
import gpflow
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.eager import context
from trieste.acquisition import (
    GIBBON,
    AugmentedExpectedImprovement,
    BatchExpectedImprovement,
    BatchMonteCarloExpectedImprovement,
    Fantasizer,
    GreedyAcquisitionFunctionBuilder,
    GreedyContinuousThompsonSampling,
    LocalPenalization,
    MinValueEntropySearch,
    MonteCarloExpectedImprovement,
    MultipleOptimismNegativeLowerConfidenceBound,
    ParallelContinuousThompsonSampling,
)
from trieste.acquisition.function.function import AcquisitionFunctionClass
from trieste.acquisition.optimizer import generate_continuous_optimizer
from trieste.acquisition.rule import (
    AsynchronousGreedy,
    AsynchronousOptimization,
    BatchTrustRegionBox,
    DiscreteThompsonSampling,
    EfficientGlobalOptimization,
    SingleObjectiveTrustRegionBox,
    TREGOBox,
    TURBOBox,
)
from trieste.acquisition.sampler import ThompsonSamplerFromTrajectory
from trieste.acquisition.utils import copy_to_local_models
from trieste.bayesian_optimizer import BayesianOptimizer, OptimizationResult, stop_at_minimum
from trieste.models.gpflow import (
    ConditionalImprovementReduction,
    GaussianProcessRegression,
    SparseVariational,
    build_gpr,
    build_svgp,
)
from trieste.models.optimizer import Optimizer
from trieste.objectives import ScaledBranin, SimpleQuadratic
from trieste.objectives.utils import mk_observer
from trieste.observer import OBJECTIVE

from trieste_scalable.models import build_adaptive_svgp, build_nystrom_gpr, build_replicated_gpr

SPACE = ScaledBranin.search_space  # SimpleQuadratic's too


def trieste_rules() -> list[Any]:
    """Trieste's rule list with its step counts (built anew per test: rules carry state).
    Each entry: steps, rule, number of local models (1: the model itself)."""

    def ts_batch() -> Any:
        return EfficientGlobalOptimization(ParallelContinuousThompsonSampling(), num_query_points=3)

    return [
        pytest.param(20, EfficientGlobalOptimization(), 1, id="EGO"),
        pytest.param(
            30,
            EfficientGlobalOptimization(AugmentedExpectedImprovement().using(OBJECTIVE)),
            1,
            id="AugmentedEI",
        ),
        pytest.param(
            20,
            EfficientGlobalOptimization(
                MonteCarloExpectedImprovement(1000).using(OBJECTIVE),
                generate_continuous_optimizer(100),
            ),
            1,
            id="MC-EI",
        ),
        pytest.param(
            24,
            EfficientGlobalOptimization(
                MinValueEntropySearch(
                    SPACE, min_value_sampler=ThompsonSamplerFromTrajectory(sample_min_value=True)
                ).using(OBJECTIVE)
            ),
            1,
            id="MES",
        ),
        pytest.param(
            12,
            EfficientGlobalOptimization(
                BatchExpectedImprovement(sample_size=100).using(OBJECTIVE), num_query_points=3
            ),
            1,
            id="BatchEI",
        ),
        pytest.param(
            12,
            EfficientGlobalOptimization(
                BatchMonteCarloExpectedImprovement(sample_size=500).using(OBJECTIVE),
                num_query_points=3,
            ),
            1,
            id="BatchMC-EI",
        ),
        pytest.param(12, AsynchronousOptimization(num_query_points=3), 1, id="AsyncOptimization"),
        pytest.param(
            15,
            EfficientGlobalOptimization(
                LocalPenalization(SPACE).using(OBJECTIVE), num_query_points=3
            ),
            1,
            id="LocalPenalization",
        ),
        pytest.param(
            15,
            AsynchronousGreedy(LocalPenalization(SPACE).using(OBJECTIVE), num_query_points=3),
            1,
            id="AsyncGreedy-LP",
        ),
        pytest.param(
            10,
            EfficientGlobalOptimization(GIBBON(SPACE).using(OBJECTIVE), num_query_points=2),
            1,
            id="GIBBON",
        ),
        pytest.param(
            25,
            EfficientGlobalOptimization(
                MultipleOptimismNegativeLowerConfidenceBound(SPACE).using(OBJECTIVE),
                num_query_points=3,
            ),
            1,
            id="MultipleOptimismNLCB",
        ),
        pytest.param(20, BatchTrustRegionBox(TREGOBox(SPACE)), 1, id="TREGO"),
        pytest.param(
            15,
            BatchTrustRegionBox(
                TREGOBox(SPACE),
                EfficientGlobalOptimization(MinValueEntropySearch(SPACE).using(OBJECTIVE)),
            ),
            1,
            id="TREGO-MES",
        ),
        pytest.param(
            20,
            BatchTrustRegionBox([TREGOBox(SPACE) for _ in range(3)], ts_batch()),
            1,
            id="TREGO-PCTS",
        ),
        pytest.param(
            10,
            BatchTrustRegionBox(TURBOBox(SPACE), DiscreteThompsonSampling(500, 3)),
            1,
            id="Turbo",
        ),
        pytest.param(
            10,
            BatchTrustRegionBox(
                [SingleObjectiveTrustRegionBox(SPACE) for _ in range(3)], ts_batch()
            ),
            1,
            id="BatchTrustRegionBox",
        ),
        pytest.param(
            10,
            BatchTrustRegionBox(
                [SingleObjectiveTrustRegionBox(SPACE) for _ in range(3)],
                EfficientGlobalOptimization(
                    ParallelContinuousThompsonSampling(), num_query_points=2
                ),
            ),
            3,
            id="BatchTrustRegionBox-LocalModels",
        ),
        pytest.param(15, DiscreteThompsonSampling(500, 5), 1, id="DiscreteTS"),
        pytest.param(
            15, EfficientGlobalOptimization(Fantasizer(), num_query_points=3), 1, id="Fantasizer"
        ),
        pytest.param(
            10,
            EfficientGlobalOptimization(GreedyContinuousThompsonSampling(), num_query_points=5),
            1,
            id="GCTS",
        ),
        pytest.param(
            10,
            EfficientGlobalOptimization(ParallelContinuousThompsonSampling(), num_query_points=5),
            1,
            id="PCTS",
        ),
    ]


def _noise(rule: Any) -> float:
    """The noise variance Trieste's harness gives its GPR on these noise-free problems."""
    return 1e-3 if "LocalPenalization" in repr(rule) else 1e-5


# Each builder is called with the initial data and the rule. The exact-GP stand-ins get Trieste's
# GPR settings, the sparse model Trieste's SVGP settings (builder defaults, 50 inducing points).
MODELS: dict[str, Callable[[Any, Any], Any]] = {
    "nystrom": lambda data, rule: build_nystrom_gpr(data, SPACE, likelihood_variance=_noise(rule)),
    "replicated": lambda data, rule: build_replicated_gpr(
        data, SPACE, likelihood_variance=_noise(rule)
    ),
    "svgp": lambda data, rule: build_adaptive_svgp(data, SPACE, inducing=50),
}

# What Trieste's harness runs the same rule over: its GPR for our exact-GP stand-ins, its SVGP
# (Scipy-fitted, conditional-improvement inducing points) for ours.
REFERENCES: dict[str, Callable[[Any, Any], Any]] = {
    "nystrom": lambda data, rule: GaussianProcessRegression(
        build_gpr(data, SPACE, likelihood_variance=_noise(rule))
    ),
    "svgp": lambda data, rule: SparseVariational(
        build_svgp(data, SPACE, num_inducing_points=50),
        optimizer=Optimizer(gpflow.optimizers.Scipy(), compile=True),
        inducing_point_selector=ConditionalImprovementReduction(),
    ),
}
REFERENCES["replicated"] = REFERENCES["nystrom"]


def run_trieste_rule(
    build: Callable[[Any, Any], Any],
    steps: int,
    rule: Any,
    num_models: int,
    branin: bool,
    sparse: bool,
    seed: int = 0,
) -> None:
    """One run with Trieste's criterion and checks (module docstring); ``sparse``: the initial
    design Trieste gives sparse models (20 points, on both problems)."""
    # TensorFlow keeps the state of its random kernels across set_seed; clearing it makes a run
    # draw what it would draw alone, whatever ran before it in this process
    context.context().clear_kernel_cache()
    tf.random.set_seed(seed)
    np.random.seed(seed)
    problem = ScaledBranin if branin else SimpleQuadratic
    rtol = 0.005 if branin else 0.05
    num_initial = 20 if sparse else (5 if branin else 10)
    observer = mk_observer(problem.objective)
    initial = observer(SPACE.sample(num_initial))
    model = build(initial, rule)
    models = copy_to_local_models(model, num_models) if num_models > 1 else {OBJECTIVE: model}
    with tempfile.TemporaryDirectory() as directory:
        result = BayesianOptimizer(observer, SPACE).optimize(
            steps,
            {OBJECTIVE: initial},
            models,
            rule,
            track_state=True,
            track_path=Path(directory) / "history",
            early_stop_callback=stop_at_minimum(
                problem.minimum, problem.minimizers, minimum_rtol=rtol, minimum_step_number=2
            ),
            fit_initial_model=False,
        )
        assert len(result.history) <= steps
        reloaded = OptimizationResult.from_path(Path(directory) / "history")  # type: ignore
        assert reloaded.final_result.is_ok and len(reloaded.history) == len(result.history)
    best_x, best_y, _ = result.try_get_optimal_point()
    error = tf.abs((best_x - problem.minimizers) / problem.minimizers)
    assert tf.reduce_any(tf.reduce_all(error < 0.05, axis=-1), axis=0), best_x
    np.testing.assert_allclose(best_y, problem.minimum, rtol=rtol)
    if isinstance(rule, EfficientGlobalOptimization):
        _check_acquisition_function(rule)


def _check_acquisition_function(rule: EfficientGlobalOptimization) -> None:  # type: ignore[type-arg]
    """Trieste's checks: few traces, and a dill copy that gives the same values."""
    function = rule.acquisition_function
    assert function is not None
    if isinstance(function, AcquisitionFunctionClass):
        assert function.__call__._get_tracing_count() in {1, 2, 3, 4}  # type: ignore[attr-defined]
    copied = dill.loads(dill.dumps(function))
    greedy = isinstance(rule._builder, GreedyAcquisitionFunctionBuilder)
    batch = 1 if greedy else rule._num_query_points
    points = tf.expand_dims(SPACE.sample(batch), 0)
    np.testing.assert_allclose(function(points), copied(points), rtol=5e-7)


# The combinations that took over 15 s on 2 CPU cores (20 s for the replicated model) run with
# ``--runslow`` only; of the rest, each rule runs over one model by default, each model over a
# third of the rules (:func:`default_models`), so the default suite stays within its budget
# while every rule and every model still run in it.
SLOW_ON_SIMPLE_QUADRATIC = {
    ("BatchEI", "nystrom"),
    ("BatchEI", "replicated"),
    ("AsyncOptimization", "nystrom"),
    ("AsyncOptimization", "replicated"),
    ("BatchTrustRegionBox-LocalModels", "nystrom"),
    ("BatchTrustRegionBox-LocalModels", "replicated"),
    ("BatchMC-EI", "nystrom"),
    ("MES", "nystrom"),
    ("MES", "replicated"),
    ("Fantasizer", "nystrom"),
    ("Fantasizer", "replicated"),
    ("GIBBON", "nystrom"),
    ("GIBBON", "svgp"),
}


def default_models(slow: set[tuple[str, str]]) -> dict[str, str]:
    """The model each rule runs over by default: rules with the fewest models outside ``slow``
    first, each over the model used least so far, so every model runs about as often."""
    allowed = {
        rule.id: [name for name in MODELS if (rule.id, name) not in slow]
        for rule in trieste_rules()
    }
    uses = dict.fromkeys(MODELS, 0)
    chosen = {}
    for rule_id in sorted(allowed, key=lambda rule_id: len(allowed[rule_id])):
        chosen[rule_id] = min(allowed[rule_id], key=lambda name: uses[name])
        uses[chosen[rule_id]] += 1
    return chosen


def rules_over_models(slow: set[tuple[str, str]], one_model_by_default: bool = False) -> list[Any]:
    """Every rule of :func:`trieste_rules` over every model, as parameters (rule id, model name,
    steps, rule, number of models) with ids "<rule>-<model>"; those in ``slow``, and with
    ``one_model_by_default`` those over another model than :func:`default_models` chose, marked
    slow."""
    params, chosen = [], default_models(slow)
    for rule in trieste_rules():
        for model_name in MODELS:
            other = one_model_by_default and model_name != chosen[rule.id]
            params.append(
                pytest.param(
                    rule.id,
                    model_name,
                    *rule.values,
                    id=f"{rule.id}-{model_name}",
                    marks=[pytest.mark.slow] if (rule.id, model_name) in slow or other else [],
                )
            )
    return params


PARAMETERS = "rule_id, model_name, steps, rule, num_models"


@pytest.mark.parametrize(PARAMETERS, rules_over_models(SLOW_ON_SIMPLE_QUADRATIC, True))
def test_trieste_rule_finds_the_minimum_of_simple_quadratic(
    rule_id: str, model_name: str, steps: int, rule: Any, num_models: int
) -> None:
    sparse = model_name == "svgp"
    run_trieste_rule(MODELS[model_name], min(steps, 6), rule, num_models, False, sparse)


def _misses(
    build: Callable[[Any, Any], Any], rule_id: str, model_name: str, seed: int, reference: bool
) -> str:
    """Why a ScaledBranin run of a fresh rule ``rule_id`` misses ("" if it meets the
    criterion). A run over Trieste's own model (``reference``) that raises counts as a miss:
    Trieste's SVGP raises a shape error in ``predict_joint`` under MC-EI at some seeds."""
    ((steps, rule, num_models),) = [p.values for p in trieste_rules() if p.id == rule_id]
    try:
        run_trieste_rule(build, steps, rule, num_models, True, model_name == "svgp", seed)
    except AssertionError as error:
        return f"seed {seed}: {str(error)[:150]}"
    except Exception as error:  # ours must not raise: only the reference's error is caught
        if not reference:
            raise
        return f"seed {seed}: raised {type(error).__name__}"
    return ""


def _meets_criterion(
    build: Callable[[Any, Any], Any], rule_id: str, model_name: str, reference: bool = False
) -> tuple[bool, list[str]]:
    """The protocol: seed 0 meets the criterion or, failing that, two of seeds 1, 2 and 3 do
    (run in order, stopping once decided). Returns the verdict and the misses."""
    first = _misses(build, rule_id, model_name, 0, reference)
    if not first:
        return True, []
    later: list[str] = []
    for seed in (1, 2, 3):
        later.append(_misses(build, rule_id, model_name, seed, reference))
        if later.count("") == 2 or len(later) - later.count("") == 2:
            break
    return later.count("") == 2, [miss for miss in [first, *later] if miss]


@pytest.mark.slow
@pytest.mark.parametrize(PARAMETERS, rules_over_models(set()))
def test_trieste_rule_finds_the_minimum_of_scaled_branin(
    rule_id: str, model_name: str, steps: int, rule: Any, num_models: int
) -> None:
    """The issue's criterion: a rule that meets Trieste's criterion over Trieste's model meets
    it over ours. A run is random and the tolerance (0.5 %) tight, so one seed is one draw: a
    combination passes if its run meets the criterion at seed 0 or, failing that, at two of
    seeds 1-3 (:func:`_meets_criterion`). If it does not, Trieste's model goes through the same
    protocol: the test fails if Trieste's model passes it, else it xfails."""
    ours, our_misses = _meets_criterion(MODELS[model_name], rule_id, model_name)
    if ours:
        return
    theirs, their_misses = _meets_criterion(REFERENCES[model_name], rule_id, model_name, True)
    if theirs:
        pytest.fail(f"misses over our model, not over Trieste's: {our_misses}")
    pytest.xfail(f"Trieste's model misses too: {their_misses}")
