"""The model and rule of a campaign over a molecular library, the same for ``screen`` and a
prospective campaign (``propose``), so a seed picks the same molecules whichever told the
scores: a Tanimoto kernel whose variance is the scores' variance when the model is first built
(1 with ``--transform``, which standardises them), and the noise-free screen's regulariser
(:func:`screening_regulariser`)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from trieste.data import Dataset

from ..algorithms.registry import algorithm
from ..run.runner import Build
from ..spec.library import LibrarySpec


def library_models(
    spec: LibrarySpec,
    noise: float = 0.0,
    remote: Optional[Any] = None,
    packed_width: Optional[int] = None,
) -> Build:
    """Maps the data so far and the evaluations left to the (model, rule) of ``spec``
    (resolved).

    :param noise: The observations' noise standard deviation (``screen --noise``).
    :param remote: Scores a library store's shards elsewhere (``screen --scoring-actors``).
    :param packed_width: The data's query points are packed fingerprints of this many bits
        (a make-on-demand space's, for a rule whose model reads them so).
    """
    from ...kernels import Tanimoto
    from ..algorithms.builders import build

    def models(data: Dataset, remaining: int) -> tuple[Any, Any]:
        # a transform standardises what the model sees: the kernel's variance is then 1
        scale = 1.0 if spec.transform != "none" else float(np.var(data.observations)) or 1.0
        return build(
            spec.rule,
            data,
            kernel=Tanimoto(variance=scale, binary_inputs=True),
            noise_variance=noise**2 + screening_regulariser(spec.rule, scale),
            width=spec.confidence_width(),
            batch_size=spec.batch,
            max_batch_size=spec.batch_cap(),
            fit_hyperparameters=spec.fit,
            seed=spec.seed,
            screening=True,
            selector="random",
            budget=remaining,
            num_inducing=spec.inducing,
            ratio_threshold=spec.ratio_threshold,
            regulariser=spec.regulariser,
            remote_scoring=remote,
            fixed_batches=spec.batch_policy == "fixed",
            dictionary_size=spec.dictionary_size,
            outcome_transform=spec.transform,
            packed_width=packed_width,
        )

    return models


def screening_regulariser(name: str, scale: float) -> float:
    """The noise variance a noise-free screen's model assumes for the algorithm ``name``: its
    registry entry's ``screening_noise_share`` of the kernel variance
    ``scale`` (1 % for Thompson sampling and random search, the kernel variance itself for the
    UCB and MINI rules, whose picks on docking tables were measured with it:
    ``benchmarks/molpal_enamine.py``). The UCB rules' batch sizes no longer hang on it: their
    ``regulariser`` is at least the kernel variance whatever the noise."""
    return algorithm(name).screening_noise_share * scale
