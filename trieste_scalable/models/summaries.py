"""TensorBoard summaries of the package's models, written as Trieste writes its own
(``trieste.models.utils.write_summary_kernel_parameters``): inside the active
``trieste.logging`` writer, at its step."""

from __future__ import annotations

from typing import Any, Callable

from trieste import logging
from trieste.models.utils import write_summary_kernel_parameters


def write_model_summaries(model: Any, name: str, extra: Callable[[], None]) -> None:
    """Unique points, evaluations, noise variance, fit rejections and attempts under ``name/``,
    the kernel's parameters, then ``extra()`` (the model's own scalars), if a writer is active
    and the model has data."""
    writer = logging.get_tensorboard_writer()
    if writer is None or model.data is None:
        return
    with writer.as_default(step=logging.get_step_number()):
        logging.scalar(f"{name}/unique_points", model.num_unique_points)
        logging.scalar(f"{name}/evaluations", model.data.num_evaluations)
        logging.scalar(f"{name}/noise_variance", model.get_observation_noise().numpy())
        logging.scalar(f"{name}/fit_rejections", model.fit_rejections)
        if model.fitter.outcomes:
            logging.scalar(f"{name}/fit_attempts", model.fitter.outcomes[-1].attempts)
        write_summary_kernel_parameters(model.get_kernel())
        extra()
