"""One setting of a campaign specification: its default, help and command-line flags in one
place (:func:`setting`), and the check of a value against its declared type
(:func:`checked_value`), so that a script calling :func:`~.screen.screen` gets the checks the
command line's parser gives (issue: the Python entry point trusted its arguments)."""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import Field, field
from typing import Any, Optional, Sequence, Union, get_args, get_origin

import numpy as np


def setting(
    default: Any,
    help: str,
    *,
    choices: Sequence[str] = (),
    flags: Sequence[str] = (),
    group: Optional[str] = None,
    path: bool = False,
    least: Optional[float] = None,
    positive: bool = False,
) -> Any:
    """A field of a campaign specification.

    :param default: Its value when not given (``None``: resolved for the campaign, or unused).
    :param help: The command line's help for it.
    :param choices: The values it may take (a string setting); empty for any.
    :param flags: Its command-line flags (default ``--name-with-dashes``).
    :param group: The command line's argument group it is listed under, if any.
    :param path: A path: ``str`` or ``os.PathLike``, kept as ``str`` (``run.json`` is JSON).
    :param least: The least value it may take (a number, finite), if any.
    :param positive: A number that must be finite and above 0.
    """
    metadata = dict(help=help, choices=tuple(choices), flags=tuple(flags), group=group, path=path)
    return field(default=default, metadata=metadata | dict(least=least, positive=positive))


def range_error(spec_field: Field, value: Any) -> Optional[str]:
    """Why ``value`` is out of ``spec_field``'s range or choices (naming its flag), if it is."""
    if value is None:
        return None
    name, meta = flags_of(spec_field)[0], spec_field.metadata
    choices, least = meta.get("choices"), meta.get("least")
    if choices and value not in choices:
        return f"{name} must be one of {', '.join(choices)}, got {value!r}"
    finite = not isinstance(value, (int, float)) or math.isfinite(value)
    if meta.get("positive") and not (finite and value > 0):
        return f"{name} must be positive, got {value}"
    if least is not None and not (finite and value >= least):
        return f"{name} must be at least {least:g}, got {value}"
    return None


def flags_of(spec_field: Field) -> tuple[str, ...]:
    """A setting's command-line flags (the first is how errors name it)."""
    return spec_field.metadata.get("flags") or (f"--{spec_field.name.replace('_', '-')}",)


def base_type(hint: Any) -> tuple[type, bool]:
    """A setting's declared type without ``Optional``, and whether ``None`` is allowed."""
    if get_origin(hint) is Union:
        kinds = [kind for kind in get_args(hint) if kind is not type(None)]
        return kinds[0], len(kinds) < len(get_args(hint))
    return hint, False


def checked_value(spec_field: Field, value: Any, hint: Any) -> Any:
    """``value`` for ``spec_field`` of type ``hint``, normalised (an integer for a ``float``
    becomes a float, an ``os.PathLike`` a ``str``, a numpy scalar a Python one).

    :raise TypeError: Naming the setting, the type it takes and the value given. Booleans are
        only ``True``/``False`` (``"no"`` is not false), counts only integers (``2.5`` and
        ``True`` are not counts), numbers never strings; a ``tuple`` of paths is a non-empty
        list or tuple of them (kept as a tuple of ``str``).
    """
    kind, optional = base_type(hint)
    if value is None and optional:
        return None
    path = bool(spec_field.metadata.get("path"))
    if kind is bool and isinstance(value, (bool, np.bool_)):
        return bool(value)
    if kind is int and isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if kind is float and isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if kind is str and path and isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        if isinstance(text, str):
            return text
    if kind is str and not path and isinstance(value, str):
        return value
    if get_origin(kind) is tuple and isinstance(value, (list, tuple)):  # paths, one or more
        if value and all(isinstance(v, (str, os.PathLike)) for v in value):
            return tuple(os.fspath(v) for v in value)
    described = {bool: "True or False", int: "an integer", float: "a number"}.get(kind)
    if get_origin(kind) is tuple:
        described = "a non-empty list of paths (str or os.PathLike)"
    what = "a path (str or os.PathLike)" if path and not described else described or "a string"
    raise TypeError(
        f"{spec_field.name} must be {what}{' or None' if optional else ''}, got {value!r} "
        f"({type(value).__name__})"
    )
