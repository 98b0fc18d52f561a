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

from typing import Any, Optional

import gpflow
from trieste.data import Dataset
from trieste.models.gpflow.builders import build_gpr
from trieste.space import SearchSpace

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


def build_nystrom_gpr(
    data: Dataset,
    search_space: SearchSpace,
    kernel_priors: bool = True,
    likelihood_variance: Optional[float] = None,
    trainable_likelihood: bool = False,
    kernel: Optional[gpflow.kernels.Kernel] = None,
    **options: Any,
) -> NystromGPR:
    """A :class:`NystromGPR` conditioned on ``data`` with Trieste's initial kernel and noise.

    :param options: Further :class:`NystromGPR` arguments (``dictionary``, ``fit_schedule``...).
    """
    kernel, noise = trieste_kernel_and_noise(
        data, search_space, kernel_priors, likelihood_variance, kernel
    )
    return NystromGPR(kernel, noise, data, fit_noise_variance=trainable_likelihood, **options)


def build_replicated_gpr(
    data: Dataset,
    search_space: SearchSpace,
    kernel_priors: bool = True,
    likelihood_variance: Optional[float] = None,
    trainable_likelihood: bool = False,
    kernel: Optional[gpflow.kernels.Kernel] = None,
    **options: Any,
) -> ReplicatedGPR:
    """A :class:`ReplicatedGPR` conditioned on ``data`` with Trieste's initial kernel and noise.

    :param options: Further :class:`ReplicatedGPR` arguments.
    """
    kernel, noise = trieste_kernel_and_noise(
        data, search_space, kernel_priors, likelihood_variance, kernel
    )
    return ReplicatedGPR(kernel, noise, data, fit_noise_variance=trainable_likelihood, **options)


def build_adaptive_svgp(
    data: Dataset,
    search_space: SearchSpace,
    kernel_priors: bool = True,
    likelihood_variance: Optional[float] = None,
    trainable_likelihood: bool = False,
    kernel: Optional[gpflow.kernels.Kernel] = None,
    **options: Any,
) -> AdaptiveSVGP:
    """An :class:`AdaptiveSVGP` on ``data`` (updated and fitted once, as its constructor does)
    with Trieste's initial kernel and noise.

    :param options: Further :class:`AdaptiveSVGP` arguments (``inducing``, ``selector``...).
    """
    kernel, noise = trieste_kernel_and_noise(
        data, search_space, kernel_priors, likelihood_variance, kernel
    )
    return AdaptiveSVGP(kernel, noise, data, fit_noise_variance=trainable_likelihood, **options)
