"""Expensive objectives evaluated on Ray workers, as they finish (the ``[distributed]`` extra).

Ray is the engine Trieste's asynchronous tutorial uses: a local cluster with no set-up (owned by
the campaign: :mod:`~trieste_scalable.cluster.connection`), and the same code runs on a cluster
(``address="auto"`` or ``ray://...``). Only
plain ``ray`` is needed; ``ray[default]`` pulls a protobuf that breaks TensorFlow.

:class:`RayEvaluator` submits points, returns whichever evaluations finish first, retries a task
whose worker died (``max_retries``), and records as failed, with its error, an evaluation that
raised, ran past ``timeout`` (counted on its worker from when it started) or lost its worker
more often than that. A failed evaluation is never data: the caller does not tell it to the
model.
"""

from __future__ import annotations

import hashlib
import math
import signal
import threading
import time
from typing import Any, Optional

import numpy as np

from ..evaluation.evaluators import (
    Evaluation,
    Objective,
    driver_times,
    failure_reason,
    run_objective,
)
from .connection import connect

BACKSTOP_SECONDS = 60.0
"""The driver gives an evaluation up ``2 * timeout`` plus this many seconds after submitting it
(its task is cancelled): the backstop for an objective stuck in native code, which never returns
to Python to take its time limit."""


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _interrupt_on_sigterm() -> None:
    """SIGTERM ends the driver as Ctrl-C does (everything logged stays, ``--resume`` goes on):
    Ray's native failure handler, installed by ``ray.init``, aborts the process on it."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


class RayEvaluator:
    """Evaluates points on Ray workers, returning them as they finish (an
    :class:`~trieste_scalable.evaluation.evaluators.Evaluator`).

    :param objective: See :data:`~trieste_scalable.evaluation.evaluators.Objective`.
    :param num_workers: Evaluations the caller keeps in flight; a local cluster is started with
        ``num_workers * num_cpus`` logical CPUs (workers that mostly wait, e.g. on a simulator
        or a remote service, need not have a core each).
    :param num_cpus: CPUs each evaluation reserves.
    :param timeout: Seconds an evaluation may run, counted on its worker from its start (time
        queued for a worker never counts), after which it fails (none by default; see
        :func:`~trieste_scalable.evaluation.evaluators.time_limit` and
        :data:`BACKSTOP_SECONDS`).
    :param max_retries: Times a task whose worker died is retried before it fails (an objective
        that raises is not retried: its error is the result).
    :param address: A Ray cluster to connect to; ``None`` starts a local one this process owns
        (:func:`~trieste_scalable.cluster.connection.connect`).
    """

    def __init__(
        self,
        objective: Objective,
        num_workers: int,
        *,
        num_cpus: float = 1.0,
        timeout: Optional[float] = None,
        max_retries: int = 1,
        address: Optional[str] = None,
    ):
        import ray

        if num_workers < 1 or not num_cpus > 0:
            raise ValueError(
                f"need num_workers >= 1 and num_cpus > 0, got {num_workers}, {num_cpus}"
            )
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if not ray.is_initialized():
            connect(address, num_cpus=num_workers * num_cpus)
            _interrupt_on_sigterm()
        self.num_workers = num_workers
        self._ray = ray
        self._timeout = timeout
        self._objective = ray.put(objective)
        self._task = ray.remote(num_cpus=num_cpus, max_retries=max_retries)(run_objective)
        self._in_flight: dict[Any, tuple[int, np.ndarray, float]] = {}
        self._submitted = 0

    @property
    def in_flight(self) -> int:
        """Evaluations submitted and not returned yet."""
        return len(self._in_flight)

    def submit(self, point: np.ndarray, payload: Any = None) -> int:
        """Start evaluating ``point`` [D]; returns its key (0, 1, 2, ... in submission order).

        :param payload: What the objective is called with instead of the point (e.g. the
            candidate's SMILES), if not ``None``.
        """
        argument = np.asarray(point) if payload is None else payload
        submitted = time.time()  # before the task exists: a worker may start it at once
        ref = self._task.remote(self._objective, argument, self._timeout)
        key = self._submitted
        self._in_flight[ref] = (key, np.asarray(point), submitted)
        self._submitted += 1
        return key

    def collect(self, wait: Optional[float] = None) -> list[Evaluation]:
        """The evaluations that finished (at least one, unless nothing is in flight or ``wait``
        seconds passed), and those that timed out, in the order they finished.

        :param wait: Longest wait for the first one (``None``: until one finishes or times out).
        """
        if not self._in_flight:
            return []
        ready, _ = self._ray.wait(
            list(self._in_flight), num_returns=1, timeout=self._next_wait(wait)
        )
        if ready:  # take everything else that is done as well
            ready, _ = self._ray.wait(list(self._in_flight), num_returns=self.in_flight, timeout=0)
        done = [self._result(ref) for ref in ready]
        return sorted(done + self._give_up_late(), key=lambda e: e.finished)

    def shutdown(self) -> None:
        """Cancel what is in flight (their results are lost) and stop a local cluster."""
        for ref in self._in_flight:
            self._ray.cancel(ref, force=True)
        self._in_flight.clear()
        self._ray.shutdown()

    def _next_wait(self, wait: Optional[float]) -> Optional[float]:
        if self._timeout is None:
            return wait
        first = min(start for _, _, start in self._in_flight.values()) + self._backstop()
        until = max(first - time.time(), 0.0)
        return until if wait is None else min(wait, until)

    def _backstop(self) -> float:
        return 2 * (self._timeout or 0.0) + BACKSTOP_SECONDS

    def _result(self, ref: Any) -> Evaluation:
        key, point, submitted = self._in_flight.pop(ref)
        try:
            value, seconds, worker = self._ray.get(ref)
        except Exception as error:  # raised by the objective, or the worker died too often
            reason = failure_reason(error)
            return Evaluation.given_up(key, point, reason, submitted, time.time())
        started, finished = driver_times(submitted, time.time(), seconds)
        times = dict(started=started, finished=finished, submitted=submitted)
        return Evaluation(key, point, value, "", worker=worker, **times)

    def _give_up_late(self) -> list[Evaluation]:
        if self._timeout is None:
            return []
        now, late = time.time(), []
        for ref, (key, point, submitted) in list(self._in_flight.items()):
            if now - submitted >= self._backstop():
                self._ray.cancel(ref, force=True)
                del self._in_flight[ref]
                reason = (
                    f"no result {self._backstop():g} s after submission (its {self._timeout:g} s "
                    "limit did not stop it: the objective never returned to Python)"
                )
                late.append(Evaluation.given_up(key, point, reason, submitted, now))
        return late


class WithLatency:
    """``objective`` with a random delay before each evaluation: log-normal (heavy-tailed), of
    mean ``mean`` seconds and log-standard deviation ``sigma``, for benchmarks and tests of
    asynchronous campaigns with cheap objectives. Each evaluation draws its own delay.

    :param seed: Seed of the delays (mixed with the point or payload, so a retried evaluation
        waits as long as the first attempt).
    """

    def __init__(self, objective: Objective, mean: float, sigma: float = 1.0, seed: int = 0):
        if not (mean > 0 and sigma >= 0):
            raise ValueError(f"need mean > 0 and sigma >= 0, got {mean}, {sigma}")
        self.objective, self.mean, self.sigma, self.seed = objective, mean, sigma, seed

    def __call__(self, point: Any) -> float:
        if isinstance(point, str):
            raw = point.encode()
        else:
            raw = np.asarray(point, np.float64).tobytes()
        entropy = [self.seed, *hashlib.sha256(raw).digest()]
        mu = math.log(self.mean) - self.sigma**2 / 2  # so that the mean delay is ``mean``
        time.sleep(float(np.random.default_rng(entropy).lognormal(mu, self.sigma)))
        return self.objective(point)
