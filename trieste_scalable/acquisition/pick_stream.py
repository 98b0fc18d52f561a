"""The picks of a batch announced as the batch grows, so that an asynchronous campaign can hand
them to free workers before the batch is complete.

A greedy batch rule (GP-BUCB, BBKB, BKB: :class:`~.hallucinated.HallucinatedBatchRule`) picks
its points one after the other; the batch it returns is those points in that order. Where a
listener is set (:func:`streaming_picks`, in the acquiring thread's context) the rule
:func:`announce` s each point as it is picked, and the listener may act on it at once: the
asynchronous engine's proposer
(:class:`~trieste_scalable.campaigns.engine.proposer.BackgroundProposer`) puts it in hand
(what that gains: ``docs/asynchronous.md``).

The listener lives in a :class:`~contextvars.ContextVar`, not on the rule: rules keep Trieste's
``acquire`` signature, and a rule shared by two threads announces only to the thread that set a
listener. Without a listener :func:`announce` does nothing.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator, Optional

import numpy as np
import tensorflow as tf

PickListener = Callable[[np.ndarray], None]
"""Called with each pick, a point [1, D], in the order of the batch."""

_LISTENER: ContextVar[Optional[PickListener]] = ContextVar("pick_listener", default=None)


@contextmanager
def streaming_picks(listener: PickListener) -> Iterator[None]:
    """Within the block, rules in this context announce each pick to ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def announce(point: tf.Tensor) -> None:
    """Hand ``point`` [1, D], the batch's next row, to the listener set in this context, if
    any."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(point.numpy())


@contextmanager
def translated_picks(translate: Callable[[np.ndarray], np.ndarray]) -> Iterator[None]:
    """Within the block, picks announced reach this context's listener (if any) as
    ``translate`` of them: a rule that hands another rule's points on in other coordinates
    (:class:`~trieste_scalable.spaces.pool_rule.MakeOnDemandPoolRule`: fingerprints to reagent
    tuples) announces them in its own."""
    listener = _LISTENER.get()
    if listener is None:
        yield
        return
    with streaming_picks(lambda point: listener(translate(point))):
        yield
