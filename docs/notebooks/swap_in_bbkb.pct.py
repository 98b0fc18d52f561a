# %% [markdown]
# # Swapping BBKB into a Trieste loop
#
# This notebook (jupytext percent format: open it with `jupytext --to notebook` or run it as a
# script) runs an ordinary Trieste ask/tell loop with Trieste's batch UCB, then the same loop
# with trieste-scalable's BBKB over a Nyström GP: two lines change, the model and the rule.
# The problem is the scaled Branin function on a 50 x 50 grid, observed with noise.

# %%
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from trieste.acquisition import Fantasizer, NegativeLowerConfidenceBound
from trieste.acquisition.rule import EfficientGlobalOptimization
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset
from trieste.models.gpflow import GaussianProcessRegression, build_gpr
from trieste.objectives import ScaledBranin
from trieste.space import DiscreteSearchSpace

from trieste_scalable.acquisition import BBKB, ConfidenceWidth
from trieste_scalable.models import build_nystrom_gpr

tf.random.set_seed(1)
grid = np.stack(np.meshgrid(np.linspace(0, 1, 50), np.linspace(0, 1, 50)), -1).reshape(-1, 2)
search_space = DiscreteSearchSpace(tf.constant(grid))
truth = ScaledBranin.objective
NOISE_STD = 0.1


def observer(x: tf.Tensor) -> Dataset:
    noise = NOISE_STD * tf.random.normal([x.shape[0], 1], dtype=x.dtype)
    return Dataset(x, truth(x) + noise)


initial_data = observer(search_space.sample(10))
BUDGET = 60

# %% [markdown]
# The loop: ask for a batch, evaluate it, tell the results, until the budget is spent. It does
# not care how many points a step returns; BBKB's batches vary in size.


# %%
def run(model, rule) -> tuple[Dataset, list[int]]:  # type: ignore[no-untyped-def]
    ask_tell = AskTellOptimizer(search_space, initial_data, model, rule)
    sizes: list[int] = []
    while sum(sizes) < BUDGET:
        batch = ask_tell.ask()[: BUDGET - sum(sizes)]
        ask_tell.tell(observer(batch))
        sizes.append(int(batch.shape[0]))
    return ask_tell.dataset, sizes


# Trieste's batch UCB: an exact GP, batches of 10 built with fantasised observations.
trieste_model = GaussianProcessRegression(build_gpr(initial_data, search_space))
trieste_rule = EfficientGlobalOptimization(
    Fantasizer(NegativeLowerConfidenceBound(2.0)), num_query_points=10
)
trieste_data, trieste_sizes = run(trieste_model, trieste_rule)

# %% [markdown]
# The swap: a Nyström GP built the way `build_gpr` builds Trieste's (same kernel, priors and
# noise), and BBKB with the same confidence width. Its batches grow as the model gets confident,
# up to `max_batch_size`.

# %%
model = build_nystrom_gpr(initial_data, search_space)
rule = BBKB(width=ConfidenceWidth("constant", beta=2.0), max_batch_size=10)
bbkb_data, bbkb_sizes = run(model, rule)

# %% [markdown]
# Both runs, by the noise-free value of the best point found so far (the minimum of the scaled
# Branin function is about -1.05) and by where they evaluated.


# %%
def best_so_far(data: Dataset) -> np.ndarray:
    values = truth(data.query_points).numpy()[len(initial_data) :, 0]
    return np.minimum.accumulate(values)


fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
left.plot(best_so_far(trieste_data), label="Trieste: GPR + Fantasizer UCB")
left.plot(best_so_far(bbkb_data), label="trieste-scalable: NystromGPR + BBKB")
left.axhline(float(tf.reduce_min(truth(search_space.points))), color="k", ls=":", label="minimum")
left.set(xlabel="evaluations", ylabel="best true value so far")
left.legend()
values = truth(search_space.points).numpy().reshape(50, 50)
right.contourf(np.linspace(0, 1, 50), np.linspace(0, 1, 50), values, levels=30, cmap="Greys")
for data, marker, name in ((trieste_data, "o", "Trieste"), (bbkb_data, "x", "BBKB")):
    points = data.query_points.numpy()[len(initial_data) :]
    right.scatter(points[:, 0], points[:, 1], marker=marker, label=name)
right.legend()
plt.tight_layout()
plt.show()

print(f"best true value: Trieste {best_so_far(trieste_data)[-1]:.3f} in batches {trieste_sizes}")
print(f"best true value: BBKB {best_so_far(bbkb_data)[-1]:.3f} in batches {bbkb_sizes}")
