"""The background proposer of asynchronous campaigns, without Ray: results are told all at once
before the next acquisition (never a failed one), proposals carry the state of the acquisition
that made them (a pick announced while its acquisition runs: the state before it), a rule that
proposes nothing is asked again only after a new result, and an error on the proposer's thread
reaches the caller; acquisitions run in the caller's context."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from trieste.data import Dataset

from trieste_scalable.acquisition.pick_stream import announce
from trieste_scalable.campaigns.engine.proposer import BackgroundProposer, Proposal
from trieste_scalable.evaluation.evaluators import Evaluation
from trieste_scalable.stores.cache import CACHE_LIBRARY, for_library


class ScriptedAskTell:
    """An ``AskTellOptimizer`` stand-in that proposes scripted batches and records its calls."""

    def __init__(self, batches: list[list[float]]):
        self.batches = batches
        self.calls: list[Any] = []  # ("tell", told x) or ("ask", number)
        self.dataset = Dataset(tf.zeros([1, 1], tf.float64), tf.zeros([1, 1], tf.float64))
        self.acquisition_state: Any = None

    def ask(self) -> tf.Tensor:
        if not self.batches:
            raise ValueError("the script ran out")
        batch = self.batches.pop(0)
        asks = sum(call[0] == "ask" for call in self.calls) + 1
        self.calls.append(("ask", asks))
        self.acquisition_state = f"after ask {asks}"
        return tf.constant(np.reshape(batch, [-1, 1]), tf.float64)

    def tell(self, data: Dataset) -> None:
        self.calls.append(("tell", sorted(data.query_points.numpy()[:, 0].tolist())))


def _evaluation(x: float, value: float | None) -> Evaluation:
    return Evaluation(0, np.array([x]), value, "" if value is not None else "boom", 0.0, 1.0, "")


def test_results_are_told_at_once_before_the_next_ask_and_failures_never() -> None:
    script = ScriptedAskTell([[1.0, 2.0], [3.0]])
    proposer = BackgroundProposer(script, [Proposal(np.array([9.0]), 0, "resumed")])
    assert [p.ask for p in proposer.take(5)] == [0]  # the proposals given first, no ask
    proposer.want(2)
    assert proposer.wait(10.0)
    first = proposer.take(5)
    assert [(p.point[0], p.ask, p.state) for p in first] == [
        (1.0, 1, "after ask 1"),
        (2.0, 1, "after ask 1"),
    ]
    proposer.want(0)  # nothing wanted: results wait untold
    proposer.tell_later([_evaluation(1.0, 0.5), _evaluation(2.0, None)])
    proposer.tell_later([_evaluation(9.0, 0.1)])
    assert script.calls == [("ask", 1)]
    proposer.want(1)
    assert proposer.wait(10.0)
    assert [p.state for p in proposer.take(1)] == ["after ask 2"]
    assert script.calls == [("ask", 1), ("tell", [1.0, 9.0]), ("ask", 2)]  # one tell, no failure
    proposer.tell_later([_evaluation(3.0, 0.2)])
    proposer.close()  # what is left is told on close
    assert script.calls[-1] == ("tell", [3.0])


def test_a_rule_that_proposes_nothing_is_asked_again_only_after_a_result() -> None:
    script = ScriptedAskTell([[], [], [4.0]])
    proposer = BackgroundProposer(script, [])
    proposer.want(1)
    assert not proposer.wait(10.0)  # asked once, got nothing, will not ask again by itself
    assert not proposer.asking and script.calls == [("ask", 1)]
    # a failure is news: it leaves the rule's pending points, which may have held the rule back
    proposer.tell_later([_evaluation(1.0, None)])
    assert not proposer.wait(10.0) and script.calls == [("ask", 1), ("ask", 2)]
    proposer.tell_later([_evaluation(2.0, 0.3)])
    assert proposer.wait(10.0)
    assert [p.point[0] for p in proposer.take(1)] == [4.0]
    proposer.close()


def test_an_error_while_proposing_reaches_the_caller() -> None:
    proposer = BackgroundProposer(ScriptedAskTell([]), [])
    proposer.want(1)
    with pytest.raises(RuntimeError, match="proposing the next points failed") as raised:
        proposer.wait(10.0)
    assert isinstance(raised.value.__cause__, ValueError)
    with pytest.raises(RuntimeError):
        proposer.close()


class _NotingLibrary(ScriptedAskTell):
    """Notes the library cache entries would be recorded for when it is asked."""

    def ask(self) -> tf.Tensor:
        self.calls.append(("library", CACHE_LIBRARY.get()))
        return super().ask()


def test_acquisitions_write_cache_entries_for_the_callers_library() -> None:
    script = _NotingLibrary([[1.0]])
    with for_library("my.store"):  # as run_screen sets it around a campaign
        proposer = BackgroundProposer(script, [])
    proposer.want(1)
    assert proposer.wait(10.0)
    proposer.close()
    assert script.calls[0] == ("library", "my.store")  # not "": the entries' library recorded


class _Announcing(ScriptedAskTell):
    """Announces the first ``announced`` points of each batch as a greedy rule picks them, and
    waits after the first until ``taken`` is set."""

    def __init__(self, batches: list[list[float]], announced: int, wrong: bool = False):
        super().__init__(batches)
        self.announced, self.wrong, self.taken = announced, wrong, threading.Event()

    def ask(self) -> tf.Tensor:
        for i, x in enumerate(self.batches[0][: self.announced] if self.batches else []):
            announce(tf.constant([[x + 0.5 if self.wrong else x]], tf.float64))
            if i == 0:
                assert self.taken.wait(10.0)
        return super().ask()


def test_picks_announced_during_an_acquisition_are_in_hand_before_it_ends() -> None:
    script = _Announcing([[1.0, 2.0, 3.0]], announced=2)
    proposer = BackgroundProposer(script, [])
    proposer.want(3)
    assert proposer.wait(10.0)
    # the first pick, while the acquisition waits: the state from before it (none yet)
    assert [(p.point[0], p.ask, p.state) for p in proposer.take(5)] == [(1.0, 1, None)]
    assert proposer.asking
    proposer.want(0)  # no second acquisition (the script has one batch)
    script.taken.set()
    while proposer.asking:
        proposer.wait(0.01)
    assert [(p.point[0], p.ask, p.state) for p in proposer.take(5)] == [
        (2.0, 1, None),  # announced before the acquisition ended
        (3.0, 1, "after ask 1"),  # each point once, in the batch's order
    ]
    assert script.calls == [("ask", 1)]
    proposer.close()


def test_announced_picks_that_are_not_the_batch_are_an_error() -> None:
    script = _Announcing([[1.0, 2.0]], announced=1, wrong=True)
    script.taken.set()
    proposer = BackgroundProposer(script, [])
    proposer.want(2)
    with pytest.raises(RuntimeError, match="proposing the next points failed") as raised:
        while True:
            proposer.wait(10.0)
            proposer.take(5)
    assert "not the first rows" in str(raised.value.__cause__)
    with pytest.raises(RuntimeError):
        proposer.close()
