"""The example of docs/extending.md (included from here, so the documented code is tested): a new
batch rule on the public HallucinatedBatchRule base, checked against Trieste's own batch UCB."""

# --- example start
from trieste_scalable.acquisition import ConfidenceWidth, HallucinatedBatchRule, StoppingRule


class FixedSize(StoppingRule):
    """Ends every batch after ``size`` points (no adaptivity)."""

    def __init__(self, size: int):
        super().__init__(ratio_threshold=1.0)
        self.size = size

    def reset(self) -> None:  # at each batch start, on the batch's own copy of the rule
        super().reset()
        self.count = 0

    def add(self, index: int, in_batch_variance: float) -> bool:
        self.count += 1
        self.statistic = float(self.count)  # logged to TensorBoard as stopping_statistic
        return self.count >= self.size


class FixedBatchUCB(HallucinatedBatchRule):
    """Batch GP-UCB with hallucinated variances and batches of a fixed size: what Trieste's
    ``Fantasizer(NegativeLowerConfidenceBound(beta))`` does, over any model with
    ``batch_posterior()`` and ``information_gain()``."""

    _name = "fixed_batch_ucb"  # TensorBoard scope of the rule's statistics

    def __init__(self, batch_size: int, beta: float = 2.0, seed: int = 0):
        width = ConfidenceWidth("constant", beta=beta)
        super().__init__(FixedSize(batch_size), width, None, pool_size=10_000, seed=seed)


# --- example end

import gpflow  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from trieste.acquisition import Fantasizer, NegativeLowerConfidenceBound  # noqa: E402
from trieste.acquisition.rule import EfficientGlobalOptimization  # noqa: E402
from trieste.data import Dataset  # noqa: E402
from trieste.models.gpflow import GaussianProcessRegression  # noqa: E402
from trieste.space import DiscreteSearchSpace  # noqa: E402

from trieste_scalable.models import ExactDictionary, NystromGPR  # noqa: E402

from ..util import se_kernel  # noqa: E402


def test_the_example_rule_picks_the_batch_triestes_batch_ucb_picks() -> None:
    rng = np.random.default_rng(3)
    space = DiscreteSearchSpace(tf.constant(rng.uniform(size=(300, 2))))
    x = tf.constant(rng.uniform(size=(12, 2)))
    data = Dataset(x, tf.sin(6.0 * x[:, :1]) + 0.1 * tf.constant(rng.normal(size=(12, 1))))
    ours = NystromGPR(se_kernel(), 0.05, data, dictionary=ExactDictionary(), jitter=0.0)
    batch = FixedBatchUCB(5).acquire_single(space, ours, data)(None)[1]
    gpr = gpflow.models.GPR(
        data.astuple(),
        se_kernel(),
        gpflow.mean_functions.Constant(ours.prior_mean),
        noise_variance=0.05,
    )
    fantasizer = EfficientGlobalOptimization(
        Fantasizer(NegativeLowerConfidenceBound(2.0)), num_query_points=5
    )
    expected = fantasizer.acquire_single(space, GaussianProcessRegression(gpr), data)
    assert batch.shape == (5, 2)
    np.testing.assert_allclose(batch, expected)  # the same points, picked in the same order
    assert len(np.unique(batch.numpy(), axis=0)) == 5
