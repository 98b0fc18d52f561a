"""Proposals made ahead of the workers on a background thread (asynchronous campaigns).

A :class:`BackgroundProposer` owns the campaign's ``AskTellOptimizer``: on its own thread it tells
the model what has finished and asks the rule for more, while the driver's thread keeps handing
the proposals in hand to free workers and collecting results. TensorFlow releases the GIL in its
kernels, so an acquisition runs while the driver waits on Ray: a worker that finishes during an
acquisition gets a proposal in hand at once instead of waiting for the model.

A greedy batch rule's picks (GP-BUCB, BBKB, BKB) are put in hand as the rule makes them
(:mod:`~trieste_scalable.acquisition.pick_stream`), with the rule's state from before the
acquisition: free workers need not wait for the rest of the batch (at a campaign's start, all of
them). A resumed campaign takes its pending points from the journal, not from that state.

Results are told lazily, all at once just before the next acquisition: the model is only used by
acquisitions, so the rule sees exactly what it would have seen had each result been told on arrival,
and an update per acquisition (not per result) costs a fraction of the driver's time (a tell per
result took most of it with 32 workers; measured: ``benchmarks/results/design_measurements.md``).
The thread asks while fewer proposals are in hand than ``want`` asked for; after an acquisition that
proposed nothing (a rule that waits for results) it asks again only once a new result has been told.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional

import numpy as np
from trieste.ask_tell_optimization import AskTellOptimizer
from trieste.data import Dataset

from ...acquisition.candidates import CandidatesExhausted
from ...acquisition.pending import with_failures
from ...acquisition.pick_stream import streaming_picks
from ...evaluation.evaluators import Evaluation
from ...numerics.host_tensors import host_tensor
from .ask_tell import set_rule_state


@dataclass(frozen=True)
class Proposal:
    """A point proposed and not submitted yet.

    :ivar point: The point [D].
    :ivar ask: Which acquisition proposed it (1, 2, ...; 0 for a point submitted again).
    :ivar state: The rule's ``State`` value after that acquisition.
    """

    point: np.ndarray
    ask: int
    state: Any


class BackgroundProposer:
    """Tells and asks on a background thread; see the module docstring.

    :param ask_tell: The optimizer; only this object's thread uses it until :meth:`close`.
    :param first: Proposals in hand to begin with (e.g. points to submit again).
    :param asked: Called on this object's thread with each acquisition's points [K, D] and
        seconds (its tell included).
    """

    def __init__(
        self,
        ask_tell: AskTellOptimizer,
        first: list[Proposal],
        asked: Optional[Callable[[np.ndarray, float], None]] = None,
    ):
        self.ask_tell, self._asked = ask_tell, asked
        self.asks = 0
        self.ask_seconds = 0.0  # of the last acquisition, its tell included
        self._cond = threading.Condition()
        self._in_hand: deque[Proposal] = deque(first)
        self._untold: list[Evaluation] = []
        self._wanted = 0
        self._new_results = True  # anything told since an acquisition last proposed nothing
        self._asking = False
        self._closed = False
        self._error: Optional[BaseException] = None
        self.exhausted = False
        """Whether the rule said it has nothing left to pick (it is asked no more)."""
        # in the caller's context: what it set (e.g. the library that cache entries written by
        # an acquisition belong to, molecules.CACHE_LIBRARY) holds on this thread too
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._run,), name="proposer", daemon=True
        )
        self._thread.start()

    def want(self, count: int) -> None:
        """Keep at least ``count`` proposals in hand (0: ask no more for now)."""
        with self._cond:
            self._wanted = count
            self._cond.notify_all()

    def take(self, count: int) -> list[Proposal]:
        """Up to ``count`` proposals in hand, oldest first (does not wait)."""
        with self._cond:
            self._raise_error()
            return [self._in_hand.popleft() for _ in range(min(count, len(self._in_hand)))]

    def tell_later(self, finished: list[Evaluation]) -> None:
        """Tell the evaluations before the next acquisition (:func:`tell`: the failed ones
        leave the rule's pending points)."""
        if finished:
            with self._cond:
                self._untold.extend(finished)
                self._new_results = True
                self._cond.notify_all()

    @property
    def in_hand(self) -> int:
        with self._cond:
            return len(self._in_hand)

    @property
    def asking(self) -> bool:
        """Whether an acquisition is running or about to (then proposals may come soon)."""
        with self._cond:
            return self._asking or self._should_ask()

    def wait(self, seconds: Optional[float] = None) -> bool:
        """Wait until proposals are in hand or the thread will not ask (at most ``seconds``);
        return whether proposals are in hand."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._in_hand or self._error or not (self._asking or self._should_ask()),
                seconds,
            )
            self._raise_error()
            return bool(self._in_hand)

    def close(self) -> None:
        """Stop the thread and tell what is left (on the caller's thread)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        self._raise_error()
        tell(self.ask_tell, self._untold)
        self._untold = []

    def _should_ask(self) -> bool:
        return len(self._in_hand) < self._wanted and self._new_results and not self.exhausted

    def _raise_error(self) -> None:
        if self._error is not None:
            raise RuntimeError("proposing the next points failed") from self._error

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._should_ask())
                if self._closed:
                    return
                told, self._untold, self._asking = self._untold, [], True
            start = time.perf_counter()
            streamed: list[np.ndarray] = []
            try:
                tell(self.ask_tell, told)
                before = self.ask_tell.acquisition_state
                with streaming_picks(partial(self._streamed, state=before, streamed=streamed)):
                    points = self.ask_tell.ask().numpy()
                _check_streamed(streamed, points)
                state = self.ask_tell.acquisition_state
                if self._asked is not None:
                    self._asked(points, time.perf_counter() - start)
            except CandidatesExhausted:
                with self._cond:
                    self.exhausted, self._asking = True, False
                    self._cond.notify_all()
                return
            except BaseException as error:  # raised on the driver's thread by take/wait
                with self._cond:
                    self._error, self._asking = error, False
                    self._cond.notify_all()
                return
            with self._cond:
                self.asks += 1
                self.ask_seconds = time.perf_counter() - start
                rest = points[len(streamed) :]
                self._in_hand.extend(Proposal(x, self.asks, state) for x in rest)
                self._new_results = len(points) > 0 or bool(self._untold)
                self._asking = False
                self._cond.notify_all()

    def _streamed(self, point: np.ndarray, state: Any, streamed: list[np.ndarray]) -> None:
        """Put a pick [1, D] of the acquisition under way in hand, with the rule's ``state``
        from before it."""
        with self._cond:
            streamed.extend(point)
            self._in_hand.extend(Proposal(x, self.asks + 1, state) for x in point)
            self._cond.notify_all()


def _check_streamed(streamed: list[np.ndarray], points: np.ndarray) -> None:
    """Raise unless the picks announced (and maybe submitted already) lead the batch."""
    if streamed and not np.array_equal(np.stack(streamed), points[: len(streamed)]):
        raise RuntimeError(
            f"the rule announced {len(streamed)} picks that are not the first rows of the "
            f"batch of {len(points)} it returned (a wrapper that reorders or drops a greedy "
            "rule's points must not announce them: acquisition.pick_stream)"
        )


def tell(ask_tell: AskTellOptimizer, evaluations: list[Evaluation]) -> None:
    """Tell the optimizer those of ``evaluations`` that did not fail, in one dataset, and move
    the failed ones from its rule's pending points to its failed ones
    (:func:`~trieste_scalable.acquisition.pending.with_failures`)."""
    failed = [e.point for e in evaluations if e.failed]
    if failed:
        set_rule_state(ask_tell, with_failures(ask_tell.acquisition_state, np.stack(failed)))
    told = [e for e in evaluations if not e.failed]
    if told:
        dtype = ask_tell.dataset.query_points.dtype
        x = host_tensor(np.stack([e.point for e in told]), dtype)
        y = host_tensor([[e.value] for e in told], dtype)
        ask_tell.tell(Dataset(x, y))
