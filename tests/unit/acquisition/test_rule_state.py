"""Rule states survive the JSON round trip of a resumed campaign exactly."""

import dataclasses

import pytest

from trieste_scalable.acquisition import BatchUCBState, rule_state
from trieste_scalable.acquisition.minimeta import MiniMetaState
from trieste_scalable.acquisition.random_search import RandomState
from trieste_scalable.acquisition.thompson import ThompsonState


@pytest.mark.parametrize(
    "state",
    [
        None,
        BatchUCBState(information=0.1 + 0.2, num_batches=7, last_batch_size=3),
        ThompsonState(num_batches=12),
        MiniMetaState(epochs=4, switches=2, evaluations=40, last_point=(0.1, 1 / 3, 1e-300)),
        MiniMetaState(),
        RandomState(num_batches=3),
    ],
)
def test_states_round_trip_exactly(state: object) -> None:
    restored, batch = rule_state.decode(rule_state.encode(state, 5))
    assert restored == state and type(restored) is type(state) and batch == 5
    hash(restored)  # frozen and hashable again (tuples, not lists)


def test_a_users_state_registers_where_it_is_defined() -> None:
    @rule_state.saved_state
    @dataclasses.dataclass(frozen=True)
    class MyRuleState:
        steps: int = 0
        best: tuple[float, ...] = ()

    try:
        state = MyRuleState(3, (0.5, 0.25))
        assert rule_state.decode(rule_state.encode(state, 2)) == (state, 2)
    finally:
        del rule_state.STATE_TYPES["MyRuleState"]
    with pytest.raises(TypeError, match="dataclass"):
        rule_state.saved_state(dict)


def test_unknown_states_are_refused() -> None:
    with pytest.raises(TypeError, match="cannot save"):
        rule_state.encode({"num_batches": 1}, 1)
    with pytest.raises(ValueError, match="not a saved rule state"):
        rule_state.decode('{"batch": 1}')
