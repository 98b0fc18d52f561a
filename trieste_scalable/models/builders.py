"""Builders like Trieste's ``build_gpr``: a model whose kernel, priors and noise are set from the
initial data and the search space the way Trieste sets them, so that a fitted run starts where a
Trieste user's ``GaussianProcessRegression(build_gpr(data, search_space))`` would.

The kernel and noise come from Trieste's own ``build_gpr`` (Matern-5/2, lengthscales
0.2 * range * sqrt(d), signal variance the empirical variance of the observations, LogNormal
priors of scale 1 on both, noise the variance / 100 unless given; noise not fitted unless
``trainable_likelihood``): we reuse it rather than copy its constants. Our models then fit MAP
from several starts (:mod:`trieste_scalable.models.fitting`), as Trieste's model does with
``num_kernel_samples``.
"""

from __future__ import annotations

from typing import Callable, Optional, TypeVar

import gpflow
from trieste.data import Dataset
from trieste.models.gpflow.builders import build_gpr
from trieste.space import SearchSpace
from typing_extensions import Unpack

from .base import ModelOptions
from .nystrom import NystromGPR
from .replicated import ReplicatedGPR
from .svgp import AdaptiveSVGP


def trieste_kernel_and_noise(
    data: Dataset,
    search_space: SearchSpace,
    kernel_priors: bool = True,
    likelihood_variance: Optional[float] = None,
    kernel: Optional[gpflow.kernels.Kernel] = None,
) -> tuple[gpflow.kernels.Kernel, float]:
    """The kernel (with priors) and noise variance Trieste's ``build_gpr`` would start from."""
    gpr = build_gpr(
        data,
        search_space,
        kernel_priors=kernel_priors,
        likelihood_variance=likelihood_variance,
        kernel=kernel,
    )
    return gpr.kernel, float(gpr.likelihood.variance.numpy())


RECOMMENDED_VARIANCE_OPTIMISM = 2.0
"""The noisy-fit remedy the command line applies to fitted UCB models (``--variance-optimism``'s
default; :class:`~trieste_scalable.acquisition.ExplorationShare` is the rule's half)."""

ModelType = TypeVar("ModelType", NystromGPR, ReplicatedGPR, AdaptiveSVGP)


def _builder(model_type: type[ModelType], summary: str) -> Callable[..., ModelType]:
    def build(
        data: Dataset,
        search_space: SearchSpace,
        kernel_priors: bool = True,
        likelihood_variance: Optional[float] = None,
        trainable_likelihood: bool = False,
        kernel: Optional[gpflow.kernels.Kernel] = None,
        **options: Unpack[ModelOptions],
    ) -> ModelType:
        start, noise = trieste_kernel_and_noise(
            data, search_space, kernel_priors, likelihood_variance, kernel
        )
        fitted = trainable_likelihood and options.get("fit_hyperparameters", True)
        if fitted and model_type is not AdaptiveSVGP:  # the command line's remedy, by default
            options.setdefault("variance_optimism", RECOMMENDED_VARIANCE_OPTIMISM)
        if "fit_noise_variance" in options:
            raise TypeError("pass trainable_likelihood, Trieste's name, not fit_noise_variance")
        options["fit_noise_variance"] = trainable_likelihood
        return model_type(start, noise, data, **options)

    build.__doc__ = f"""{summary}

    :param data: The initial data (the model is conditioned on it).
    :param search_space: Scales the lengthscales, as in Trieste's ``build_gpr``.
    :param kernel_priors: LogNormal priors on the kernel's variance and lengthscales.
    :param likelihood_variance: The noise variance; default the data's variance / 100.
    :param trainable_likelihood: Whether fits include the noise variance; if they do, the UCB
        models' ``variance_optimism`` defaults to :data:`RECOMMENDED_VARIANCE_OPTIMISM`, the
        command line's remedy for fits that take the signal for noise (``docs/fitting.md``).
    :param kernel: A kernel to use instead of Trieste's Matern-5/2 (no priors are added).
    :param options: Further arguments of :class:`~.{model_type.__name__}`.
    """
    return build


build_nystrom_gpr = _builder(
    NystromGPR, "A ``NystromGPR`` with Trieste's initial kernel and noise (BBKB, GP-BUCB)."
)
build_replicated_gpr = _builder(
    ReplicatedGPR, "A ``ReplicatedGPR`` with Trieste's initial kernel and noise (MINI-META)."
)
build_adaptive_svgp = _builder(
    AdaptiveSVGP,
    "An ``AdaptiveSVGP`` (updated and fitted once, as its constructor does) with Trieste's "
    "initial kernel and noise (batch TS).",
)
