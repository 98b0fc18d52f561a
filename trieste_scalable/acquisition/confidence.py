r"""Confidence widths :math:`\tilde\alpha` for the UCB-family rules (Trieste minimises, so the rules
select by the lower bound :math:`\tilde\mu - \tilde\alpha\tilde\sigma`).

:math:`\tilde\sigma` is in the papers' ridge-leverage units (:math:`\tilde\sigma^2 =
\sigma^2_{\mathrm{Bayes}}/\lambda`).

- ``"theory"`` (BBKB Thm. 2):
  :math:`\tilde\alpha = \tilde C\,[2\xi\sqrt{L + \log(1/\delta)} + c_\lambda\sqrt\lambda F]`,
  with :math:`L = \sum_s \log(1 + 3\tilde\sigma^2_{fb(s-1)}(x_s))` and
  :math:`c_\lambda = 1+\sqrt2`; for an exact posterior (GP-BUCB) the factor 3 is dropped, the
  in-batch variance is used and :math:`c_\lambda = 1` (the :math:`1+\sqrt2` corrects for the
  Nystrom approximation, which an exact posterior does not make).
- ``"reference_code"`` (the authors' code): :math:`\sqrt\lambda F + \xi\sqrt{\tilde C L' +
  \log(1/\delta)}` with :math:`L' = \sum_s \log(1 + \tilde\sigma^2_{fb(s-1)}(x_s))`.
- ``"constant"``: :math:`\tilde\alpha = \beta\sqrt\lambda`, i.e. the bound is
  :math:`\mu - \beta\,\sigma_{\mathrm{Bayes}}` exactly like Trieste's
  ``NegativeLowerConfidenceBound(beta)``.

The same :class:`~.ConfidenceWidth` configures the MINI-META rules, whose modes are their paper's
(``"theory"``, ``"bayesian"``, ``"constant"``; see :mod:`.minimeta`): every rule family takes
``width=`` as a mode name or a :class:`~.ConfidenceWidth`.

The theory width over-explores heavily in practice; it is the default only
because it carries the guarantees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Optional

WidthMode = Literal["theory", "reference_code", "constant", "bayesian"]
MODES = ("theory", "reference_code", "constant", "bayesian")


@dataclass(frozen=True)
class ConfidenceWidth:
    """How the rule computes :math:`\\tilde\\alpha`.

    :ivar mode: ``"theory"``, ``"reference_code"``, ``"constant"`` or ``"bayesian"`` (each rule
        accepts the modes of its paper).
    :ivar beta: The constant's :math:`\\beta` (Trieste units), for ``"constant"``.
    :ivar noise_std: :math:`\\xi`; default :math:`\\sqrt\\lambda` (the model's noise).
    :ivar rkhs_norm: :math:`F \\ge \\|f\\|_{\\mathcal H}`.
    :ivar delta: Confidence level :math:`\\delta \\in (0, 1)`.
    """

    mode: WidthMode = "theory"
    beta: float = 2.0
    noise_std: Optional[float] = None
    rkhs_norm: float = 1.0
    delta: float = 0.1

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown width mode {self.mode!r}")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")
        for name in ("beta", "rkhs_norm", "noise_std"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):  # NaN too
                raise ValueError(f"{name} must be finite and >= 0, got {value}")

    def information_term(self, variance: float, exact: bool) -> float:
        """The per-point term added to :math:`L` for a point selected with ``variance``.

        ``variance`` is the batch-start variance for Nystrom posteriors and the in-batch variance
        for exact ones (GP-BUCB).
        """
        if self.mode == "reference_code" or exact:
            return math.log1p(variance)
        return math.log1p(3.0 * variance)

    def beta_value(self, information: float, noise: float, exact: bool) -> float:
        """:math:`\\tilde\\beta` before the :math:`\\tilde C` factor (what the logs call beta)."""
        xi = math.sqrt(noise) if self.noise_std is None else self.noise_std
        log_inv_delta = math.log(1.0 / self.delta)
        if self.mode == "constant":
            return self.beta * math.sqrt(noise)
        if self.mode == "reference_code":
            return math.sqrt(noise) * self.rkhs_norm + xi * math.sqrt(
                max(information, 0.0) + log_inv_delta
            )
        bias = (1.0 if exact else 1.0 + math.sqrt(2.0)) * math.sqrt(noise) * self.rkhs_norm
        return 2.0 * xi * math.sqrt(max(information, 0.0) + log_inv_delta) + bias

    def alpha(self, information: float, noise: float, ratio_threshold: float, exact: bool) -> float:
        """The width :math:`\\tilde\\alpha` multiplying :math:`\\tilde\\sigma`: the theory
        width scales :math:`\\tilde\\beta` by :math:`\\tilde C`, the authors' code scales
        :math:`L'` inside it."""
        if self.mode == "reference_code":
            return self.beta_value(ratio_threshold * information, noise, exact)
        scale = ratio_threshold if self.mode == "theory" else 1.0
        return scale * self.beta_value(information, noise, exact)


def width_of(
    width: WidthMode | ConfidenceWidth, modes: tuple[str, ...], **defaults: float
) -> ConfidenceWidth:
    """``width`` as a :class:`~.ConfidenceWidth` (a mode name takes the rule's ``defaults``).

    :raise ValueError: If its mode is not one of the rule's ``modes``.
    """
    width = width if isinstance(width, ConfidenceWidth) else ConfidenceWidth(width, **defaults)
    if width.mode not in modes:
        raise ValueError(f"width must be one of {', '.join(modes)}, got {width.mode!r}")
    return width
