"""``run.json``: a campaign's specification and its library's content hash, written when the
campaign starts (:func:`record`) and reloaded by ``--resume`` (:func:`read_record`), which may
change only the settings of ``RESUMABLE``. Records written by earlier versions still load: a setting
they predate takes the value those campaigns ran with
(:mod:`~trieste_scalable.campaigns.migrations`)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, overload

from ...errors import CampaignError
from ..migrations import with_legacy_settings
from .campaign import CampaignSpec, OptimizeSpec
from .library import ProposeSpec, ScreenSpec

LIBRARY_HASH = "library_sha256"
SPECIFICATIONS: dict[str, type[CampaignSpec]] = {
    "screen": ScreenSpec,
    "optimize": OptimizeSpec,
    "propose": ProposeSpec,
}
"""The specification of each campaign command."""
RESUMABLE = {"budget", "quiet", "resume", "logdir", "batch_size", "max_batch_size"} | {
    "workers",  # where and how long evaluations run
    "ray_address",
    "timeout",
    "keep_radicals",  # the space's hash, checked on resume, says whether it changed what is read
}
"""Settings that may change when resuming (everything else must match the original run)."""


@dataclass(frozen=True)
class RunRecord:
    """A campaign directory's ``run.json``.

    :ivar spec: The campaign's resolved specification.
    :ivar library_hash: Its library's content hash (``None`` in records from before it).
    """

    spec: CampaignSpec
    library_hash: Optional[str]


def record(spec: CampaignSpec, library_hash: str) -> str:
    """``run.json``'s text for a campaign of ``spec`` (resolved) over a library of that hash."""
    fields = {"command": spec.command, **dataclasses.asdict(spec)}
    return json.dumps({**fields, LIBRARY_HASH: library_hash})


def read_record(path: Path) -> RunRecord:
    """The campaign ``run.json`` at ``path`` records.

    :raise CampaignError: If the file cannot be read, is not a JSON object of a campaign's
        settings, or holds a setting of the wrong type or value (naming the file and setting).
    """
    try:
        saved = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CampaignError(f"{path} is damaged ({error}); cannot check the settings") from None
    if not isinstance(saved, dict):
        raise CampaignError(f"{path} is damaged: expected a JSON object of settings")
    library_hash = saved.pop(LIBRARY_HASH, None)
    command = saved.pop("command", None)
    if command not in SPECIFICATIONS:
        raise CampaignError(f"{path} is damaged: no campaign command ({command!r})")
    kind = SPECIFICATIONS[command]
    names = {spec_field.name for spec_field in dataclasses.fields(kind)}
    unknown = sorted(set(saved) - names)
    if unknown:
        raise CampaignError(f"{path} is damaged: {command} has no setting {unknown[0]!r}")
    try:
        spec = kind(**with_legacy_settings(saved, names))
    except (TypeError, ValueError) as error:
        raise CampaignError(f"{path} is damaged ({error})") from None
    if library_hash is not None and not isinstance(library_hash, str):
        raise CampaignError(f"{path} is damaged: {LIBRARY_HASH} is not a string")
    return RunRecord(spec, library_hash)


def changed_settings(original: CampaignSpec, now: CampaignSpec) -> dict[str, tuple[Any, Any]]:
    """The settings ``now`` changes from ``original`` that a resumed campaign may not
    change (their names, each with the original value and the new one); a path names the same
    file or directory however it is written (relative or absolute)."""
    if type(original) is not type(now):
        return {"command": (original.command, now.command)}

    def same(spec_field: dataclasses.Field, before: Any, after: Any) -> bool:
        if spec_field.metadata.get("path") and before is not None and after is not None:
            before, after = resolved_paths(before), resolved_paths(after)
        return bool(before == after)

    return {
        spec_field.name: (getattr(original, spec_field.name), getattr(now, spec_field.name))
        for spec_field in dataclasses.fields(now)
        if spec_field.name not in RESUMABLE
        and not same(spec_field, getattr(original, spec_field.name), getattr(now, spec_field.name))
    }


@overload
def resolved_paths(value: str) -> str: ...


@overload
def resolved_paths(value: tuple[str, ...]) -> tuple[str, ...]: ...


def resolved_paths(value: str | tuple[str, ...]) -> str | tuple[str, ...]:
    """A path setting (or a tuple of them) with each path that exists made absolute."""

    def resolved(path: str) -> str:
        return str(Path(path).resolve()) if Path(path).exists() else path

    return resolved(value) if isinstance(value, str) else tuple(resolved(p) for p in value)
