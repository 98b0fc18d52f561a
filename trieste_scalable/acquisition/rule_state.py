"""A rule's Trieste ``State`` value to and from JSON, so a resumed campaign continues the rule
where it stopped (batch Thompson sampling's seeds, the UCB rules' accumulated information, MINI's
epoch counts) instead of starting it afresh.

The states are the frozen dataclasses the rules return, each registered where it is defined
with :func:`saved_state` (:class:`~.hallucinated.BatchUCBState`, :class:`~.thompson.ThompsonState`,
:class:`~.epochs.MiniMetaState`, the campaigns' ``RandomState``; a user's rule registers its own);
their fields are numbers, ``None`` or (nested) tuples of numbers, which JSON holds exactly
(``repr`` round trip of floats).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import typing
from typing import Any, Optional, TypeVar, Union

import numpy as np

STATE_TYPES: dict[str, type] = {}
"""The rule states :func:`encode` and :func:`decode` know, by class name (:func:`saved_state`)."""

StateT = TypeVar("StateT", bound=type)


def saved_state(cls: StateT) -> StateT:
    """Class decorator for a rule's frozen dataclass state: campaigns save it after each batch
    and restore it on resume. Its fields are checked whenever one is constructed (decoded,
    restored, or built by a rule): :func:`check_fields`."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"a saved rule state must be a dataclass, got {cls.__name__}")
    STATE_TYPES[cls.__name__] = cls
    original = cls.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        check_fields(self)

    cls.__init__ = __init__  # type: ignore[method-assign]
    return cls


def check_fields(state: Any) -> None:
    """Every field of a rule state is of its annotated type (``_conforms``: ints are ints,
    floats finite numbers, points tuples of finite rows) and every count (``int`` field), and
    every field whose metadata says ``non_negative``, is non-negative.

    :raise TypeError: Naming the state type, the field and its value, on a wrong type.
    :raise ValueError: Likewise, on a negative count.
    """
    hints = _type_hints(type(state))
    for field in dataclasses.fields(state):
        value, hint = getattr(state, field.name), hints[field.name]
        if not _conforms(value, hint):
            shown = repr(value) if len(repr(value)) < 80 else repr(value)[:77] + "..."
            raise TypeError(
                f"{type(state).__name__}.{field.name} = {shown} is not of type {_hint_name(hint)}"
            )
        if (hint is int or field.metadata.get("non_negative")) and value is not None and value < 0:
            raise ValueError(f"{type(state).__name__}.{field.name} = {value} is negative")


def check_state(state: Any, expected: type, rule: object) -> None:
    """Refuse a state ``rule`` cannot continue from (e.g. another rule's, restored with
    ``AskTellOptimizer.from_state``); ``None`` (a fresh start) is accepted.

    :raise TypeError: Naming the rule and both state types.
    """
    if state is not None and not isinstance(state, expected):
        raise TypeError(
            f"{rule!r} cannot continue from a {type(state).__name__} (it keeps a "
            f"{expected.__name__}): the state was saved by another rule"
        )


def encode(state: Any, batch: int) -> str:
    """JSON of ``state`` (or ``None``) as it stood after ``batch`` batches."""
    if state is None:
        return json.dumps({"batch": batch, "type": None})
    if type(state).__name__ not in STATE_TYPES:
        raise TypeError(f"cannot save a rule state of type {type(state).__name__}")
    # shallow: the states' fields are numbers and tuples, and asdict's deep copy of thousands of
    # pending fingerprints took seconds a batch
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    return json.dumps({"batch": batch, "type": type(state).__name__, "fields": fields})


def _frozen(value: Any) -> Any:
    """JSON lists back as (nested) tuples."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def decode(text: str) -> tuple[Optional[Any], int]:
    """The state and the batch it followed; lists come back as tuples (the states are frozen
    and hashable).

    :raise ValueError: On text that is not a saved state.
    """
    try:
        saved = json.loads(text)
        batch = saved["batch"]
        if not _conforms(batch, int) or batch < 0:
            raise ValueError(f"batch {batch!r} is not a count of batches")
        if saved["type"] is None:
            return None, batch
        if not isinstance(saved["type"], str) or saved["type"] not in STATE_TYPES:
            known = ", ".join(sorted(STATE_TYPES))
            raise ValueError(f"type {saved['type']!r} is not a rule state ({known})")
        cls = STATE_TYPES[saved["type"]]
        if not isinstance(saved["fields"], dict):
            raise TypeError(f"fields {saved['fields']!r} are not an object")
        fields = {k: _frozen(v) for k, v in saved["fields"].items()}
        return cls(**fields), batch
    except (KeyError, TypeError, ValueError, RecursionError) as error:
        raise ValueError(f"not a saved rule state ({type(error).__name__}: {error})") from None


_HINTS: dict[type, dict[str, Any]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    """A state class's resolved field types (resolved once: states are built every batch)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _hint_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a decoded ``value`` is of the field type ``hint``: ints are ints (not bools or
    strings), floats finite numbers, tuples tuples of such values, ``Optional`` also ``None``.
    Types beyond these are taken as JSON gave them."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return number and math.isfinite(value)
    if hint is type(None):
        return value is None
    if origin is Union:
        return any(_conforms(value, arg) for arg in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if args and args[-1] is Ellipsis and (args[0] is float or args[0] == tuple[float, ...]):
            return _finite_array(value, 1 if args[0] is float else 2)
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(_conforms(v, a) for v, a in zip(value, args))
    return True


def _finite_array(value: tuple, ndim: int) -> bool:
    """Whether ``value`` is a tuple (of tuples, for ``ndim`` 2) of finite numbers, rectangular:
    points, checked as one array (a state holds thousands of fingerprints)."""
    if ndim == 2 and not all(isinstance(row, tuple) for row in value):
        return False
    if not value:
        return True
    try:
        array = np.asarray(value)
    except ValueError:  # ragged
        return False
    return array.ndim == ndim and array.dtype.kind in "iuf" and bool(np.all(np.isfinite(array)))
