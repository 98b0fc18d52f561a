"""Where a campaign's evaluations run: the :class:`Evaluator` protocol the campaign engine
(:func:`~.engine.loop.run_asynchronous`) drives, what one evaluation returns,
and :class:`InProcessEvaluator`, which runs them in this process (Ray workers:
:class:`~trieste_scalable.cluster.evaluators.RayEvaluator`).

Every evaluator times an evaluation the same way: the objective's run time is measured where it
runs, on a monotonic clock, and every timestamp comes from the driver's clock
(:func:`driver_times`), so no two columns of a log come from clocks that may disagree.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Protocol

import numpy as np

Objective = Callable[[Any], float]
"""Maps one point [D] (or the payload submitted with it, e.g. a SMILES) to its observation; it
may raise (a failed evaluation). Ray pickles it to the workers, so there it must be a
module-level function or a picklable object."""


@dataclass(frozen=True)
class Evaluation:
    """One finished (or failed) evaluation.

    :ivar key: The number :meth:`Evaluator.submit` returned.
    :ivar point: The point evaluated [D].
    :ivar value: The observation, or ``None`` if the evaluation failed.
    :ivar error: Why it failed ("" if it did not).
    :ivar started: When it started: ``finished`` less the run time measured where it ran, never
        before ``submitted`` (``submitted`` if it never ran).
    :ivar finished: When the driver received it (or gave it up).
    :ivar worker: ``host:pid`` of the process that ran it ("" if unknown).
    :ivar submitted: When it was submitted.

    The three times are Unix times (``time.time()``) of the driver's clock alone.
    """

    key: int
    point: np.ndarray
    value: Optional[float]
    error: str
    started: float
    finished: float
    worker: str
    submitted: float = 0.0

    @property
    def failed(self) -> bool:
        return self.value is None

    @classmethod
    def given_up(
        cls, key: int, point: np.ndarray, reason: str, submitted: float, finished: float
    ) -> Evaluation:
        """An evaluation that failed for ``reason`` without a result from any worker."""
        return cls(
            key,
            point,
            value=None,
            error=reason,
            started=submitted,
            finished=finished,
            worker="",
            submitted=submitted,
        )

    @classmethod
    def replayed(cls, key: int, point: np.ndarray, value: Optional[float]) -> Evaluation:
        """An evaluation told before (``None``: it failed), told again to a rebuilt model: no
        times, no worker."""
        return cls(key, point, value=value, error="", started=0.0, finished=0.0, worker="")


class Evaluator(Protocol):
    """What the campaign engine needs of the place evaluations run: ``num_workers`` evaluations
    in flight at most, submitted one at a time and collected as they finish."""

    num_workers: int

    @property
    def in_flight(self) -> int:
        """Evaluations submitted and not collected yet."""

    def submit(self, point: np.ndarray, payload: Any = None) -> int:
        """Start evaluating ``point`` [D] (the objective gets ``payload`` instead if not
        ``None``); returns its key (0, 1, 2, ... in submission order)."""

    def collect(self, wait: Optional[float] = None) -> list[Evaluation]:
        """Evaluations that finished (at least one unless nothing is in flight or ``wait``
        seconds passed), in the order they finished."""

    def shutdown(self) -> None:
        """Give up what is in flight and release the workers."""


MAX_ABS_VALUE = 1e150
"""Largest observation a campaign accepts in magnitude: a model sums squares of observations."""


class EvaluationTimeout(TimeoutError):
    """An evaluation ran for longer than its time limit (raised inside the objective)."""


@contextmanager
def time_limit(seconds: Optional[float]) -> Iterator[None]:
    """Raise :class:`EvaluationTimeout` in the code run inside after ``seconds`` of *its own*
    run time (a ``SIGALRM`` timer: where the evaluation runs, not where it was submitted, so
    time spent queued for a worker never counts). Only the main thread of a Unix process can
    take the signal (Ray runs tasks there); elsewhere, or with ``None``, there is no limit."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise EvaluationTimeout(f"timed out after {seconds:g} s of running")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_objective(
    objective: Objective, argument: Any, timeout: Optional[float] = None
) -> tuple[float, float, str]:
    """One evaluation where it runs: the observation, the seconds the objective ran (this
    process's monotonic clock) and the process (``host:pid``).

    :param timeout: Seconds the objective may run (:func:`time_limit`), if not ``None``.
    :raise EvaluationTimeout: If the objective ran out of time.
    :raise ValueError: If the objective returned NaN, an infinity or a value beyond
        :data:`MAX_ABS_VALUE` (the evaluation fails with that reason: told to a model it would
        end the campaign).
    """
    start = time.perf_counter()
    with time_limit(timeout):
        value = checked_value(objective(argument))
    return value, time.perf_counter() - start, f"{socket.gethostname()}:{os.getpid()}"


def checked_value(returned: Any) -> float:
    """What an objective ``returned``, as a float.

    :raise ValueError: If it is NaN, an infinity or beyond :data:`MAX_ABS_VALUE`, saying the
        value as the objective returned it.
    """
    value = float(returned)
    if not math.isfinite(value):
        raise ValueError(f"the objective returned {value}, not a finite number")
    if abs(value) > MAX_ABS_VALUE:
        raise ValueError(
            f"the objective returned {value:g}, beyond +-{MAX_ABS_VALUE:g} (its square would "
            "overflow the model's float64 sums)"
        )
    return value


def driver_times(submitted: float, received: float, seconds: float) -> tuple[float, float]:
    """Start and finish of an evaluation on the driver's clock: it finished when the driver
    received it and started ``seconds`` (its run time, measured where it ran) before, but not
    before it was submitted. So ``submitted <= started <= finished`` always holds."""
    finished = max(received, submitted)
    return max(submitted, finished - max(seconds, 0.0)), finished


def failure_reason(error: BaseException) -> str:
    """One line saying why an evaluation failed: the error's type and its last line."""
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[-1] if message else ''}"


class InProcessEvaluator:
    """Runs evaluations in this process, in submission order, when :meth:`collect` is called:
    the engine then logs them as they finish, in every mode, and needs no Ray (tests, objectives
    that are cheap or hold the process's own resources).

    :param objective: See :data:`Objective`; an evaluation that raises an ``Exception`` or
        returns a non-finite value fails with that reason (anything else, e.g.
        ``KeyboardInterrupt``, propagates).
    :param num_workers: Evaluations the engine keeps submitted (a batch in whole-batch mode).
    :param group_seconds: :meth:`collect` runs evaluations until one has run for this long in
        all, then returns them together (0: one at a time). Cheap evaluations are then logged
        in one write per group rather than one each; a crash loses at most this much work.
    """

    def __init__(self, objective: Objective, num_workers: int = 1, group_seconds: float = 0.0):
        if num_workers < 1:
            raise ValueError(f"need num_workers >= 1, got {num_workers}")
        self.objective, self.num_workers = objective, num_workers
        self.group_seconds = group_seconds
        self._queue: deque[tuple[int, np.ndarray, Any, float]] = deque()
        self._submitted = 0

    @property
    def in_flight(self) -> int:
        return len(self._queue)

    def submit(self, point: np.ndarray, payload: Any = None) -> int:
        argument = np.asarray(point) if payload is None else payload
        key = self._submitted
        self._queue.append((key, np.asarray(point), argument, time.time()))
        self._submitted += 1
        return key

    def collect(self, wait: Optional[float] = None) -> list[Evaluation]:
        """The next submitted evaluations, run now (``wait`` is not needed: it returns when
        they do)."""
        done: list[Evaluation] = []
        start = time.perf_counter()
        while self._queue and (not done or time.perf_counter() - start < self.group_seconds):
            done.append(self._run(*self._queue.popleft()))
        return done

    def _run(self, key: int, point: np.ndarray, argument: Any, submitted: float) -> Evaluation:
        try:
            value, seconds, worker = run_objective(self.objective, argument)
        except Exception as error:  # the objective's failure is the evaluation's result
            reason = failure_reason(error)
            return Evaluation.given_up(key, point, reason, submitted, time.time())
        started, finished = driver_times(submitted, time.time(), seconds)
        times = dict(started=started, finished=finished, submitted=submitted)
        return Evaluation(key, point, value, "", worker=worker, **times)

    def shutdown(self) -> None:
        self._queue.clear()
