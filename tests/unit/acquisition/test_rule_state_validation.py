"""Rule states are validated where they are constructed and decoded (issue 49, case 7): types,
ranges and finiteness; a resumed ``rule_state.json`` of another rule is refused naming the file,
the rule and the state types, and loses nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable

import pytest

from trieste_scalable.acquisition import BatchUCBState, MiniMetaState, ThompsonState, rule_state
from trieste_scalable.acquisition.random_search import RandomState
from trieste_scalable.cli import main


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: ThompsonState(num_batches="3"), TypeError, r"ThompsonState\.num_batches = '3'"),
        (lambda: ThompsonState(num_batches=2.0), TypeError, r"num_batches = 2\.0 is not of type"),
        (lambda: ThompsonState(num_batches=-1), ValueError, "num_batches = -1 is negative"),
        (lambda: BatchUCBState(information=math.nan), TypeError, "information = nan"),
        (lambda: BatchUCBState(information=math.inf), TypeError, "information = inf"),
        (lambda: BatchUCBState(seen=True), TypeError, "seen = True"),
        (lambda: BatchUCBState(pending=((0.1, 0.2), (0.3,))), TypeError, "pending"),
        (lambda: BatchUCBState(failed=((0.1, math.nan),)), TypeError, "failed"),
        (lambda: BatchUCBState(pending=[[0.1, 0.2]]), TypeError, "pending"),  # not frozen
        (lambda: MiniMetaState(last_point=("a",)), TypeError, "last_point"),
        (lambda: MiniMetaState(beta=-math.inf), TypeError, "beta = -inf"),
        (lambda: RandomState(num_batches=None), TypeError, "num_batches = None"),
    ],
)
def test_ill_formed_states_are_refused_where_constructed(
    make: Callable[[], Any], error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        make()


def test_well_formed_states_construct_and_round_trip() -> None:
    states = [
        ThompsonState(3, pending=((0.0, 1.0), (2.0, 3.0)), seen=7, failed=((1.0, 1.0),)),
        BatchUCBState(0.5, 2, 4, pending=(), seen=0, failed=()),
        BatchUCBState(),
        MiniMetaState(epochs=2, last_point=(0.5, 1), beta=3.0, incumbent=-1.5),
        RandomState(1, pending=((4.0,),), seen=3),
    ]
    for state in states:
        assert rule_state.decode(rule_state.encode(state, 5)) == (state, 5)


@pytest.mark.parametrize(
    "saved, message",
    [
        ({"batch": -5, "type": None}, "batch -5 is not a count"),
        ({"batch": "2", "type": None}, "batch '2' is not a count"),
        ({"batch": True, "type": None}, "batch True is not a count"),
        ({"batch": 1, "type": 3, "fields": {}}, "type 3 is not a rule state"),
        ({"batch": 1, "type": "ThompsonState", "fields": [1]}, r"fields \[1\] are not an object"),
        ({"batch": 1, "type": "ThompsonState", "fields": {"num_batches": -2}}, "is negative"),
        ({"batch": 1, "type": "ThompsonState", "fields": {"colour": 1}}, "colour"),
    ],
)
def test_decoding_refuses_hostile_saved_states(saved: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"not a saved rule state.*{message}"):
        rule_state.decode(json.dumps(saved))


def test_resuming_from_another_rules_state_names_the_file_the_rule_and_the_types(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    logdir = tmp_path / "run"
    args = ["optimize", "--problem", "grid3", "--algorithm", "random", "--logdir", str(logdir)]
    args += ["--quiet", "--batch-size", "5"]
    assert main(args + ["--budget", "20"]) == 0
    before = (logdir / "evaluations.csv").read_text()
    state, batch = rule_state.decode((logdir / "rule_state.json").read_text())
    assert isinstance(state, RandomState)
    other = ThompsonState(
        state.num_batches, pending=state.pending, seen=state.seen, failed=state.failed
    )
    (logdir / "rule_state.json").write_text(rule_state.encode(other, batch))
    capsys.readouterr()
    assert main(args + ["--budget", "30", "--resume"]) == 1
    err = capsys.readouterr().err
    assert "rule_state.json holds a ThompsonState" in err
    assert "the rule random (RandomRule) keeps a RandomState" in err
    assert (logdir / "evaluations.csv").read_text() == before  # nothing lost or added
