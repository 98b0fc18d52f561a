"""What a campaign directory holds beside its log, and the checks a start or ``--resume`` makes
on it: ``run.json`` (the settings and the library's content hash) and ``rule_state.json``
(:mod:`trieste_scalable.acquisition.rule_state`), for :mod:`trieste_scalable.campaigns.session`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional

from ..acquisition import rule_state
from ..errors import CampaignError, UsageError
from .records import EvaluationLog

# Settings that may change when resuming (everything else must match the original run).
RESUMABLE = {"budget", "quiet", "resume", "logdir", "command", "batch_size", "max_batch_size"}
RESUMABLE |= {"workers", "ray_address", "timeout"}  # where and how long evaluations run
LIBRARY_HASH = "library_sha256"
LEGACY_SETTINGS = {"batch_policy": "adaptive", "radius": 2, "fingerprint_width": 1024}
"""Settings of campaigns logged before the setting existed: what they ran with."""
RULE_STATE = "rule_state.json"


def saved_rule_state(path: Path, logged_batches: int, rule: Any, algorithm: str) -> Any:
    """The rule state saved with the log (``None``, a fresh rule, when a campaign from before
    states were saved has none), for ``rule`` (``algorithm`` on the command line).

    :raise CampaignError: If the file is damaged, older than the log, or holds a state of
        another rule (naming the file, the rule and both state types).
    """
    if not path.is_file():
        print(f"no {path.name}: the rule restarts from a fresh state")
        return None
    try:
        state, batch = rule_state.decode(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise CampaignError(
            f"{path} is damaged ({error}); delete it to resume with a fresh rule state"
        ) from None
    expected = getattr(rule, "state_type", None)
    if state is not None and expected is not None and not isinstance(state, expected):
        raise CampaignError(
            f"{path} holds a {type(state).__name__}, but the rule {algorithm} "
            f"({type(rule).__name__}) keeps a {expected.__name__}: it was saved by another "
            "rule; delete it to resume with a fresh rule state"
        )
    if batch < logged_batches:
        raise CampaignError(
            f"{path} is from batch {batch} but the log has {logged_batches} batches; delete it "
            "to resume with a fresh rule state"
        )
    return state


def refuse_overwrite(saved: Path, log: EvaluationLog) -> None:
    """:raise UsageError: If the directory already holds a campaign (settings or a log)."""
    if saved.exists() or log.path.exists():
        raise UsageError(
            f"{saved.parent} already holds a campaign: pass --resume to continue it, or choose "
            "another --logdir"
        )


def check_same_campaign(
    saved: Path,
    settings: dict[str, Any],
    library_hash: str,
    legacy_hash: Optional[Callable[[], str]] = None,
) -> None:
    """Check that a resumed campaign has its original settings (bar :data:`RESUMABLE`) and
    library: its logged hash is ``library_hash`` or, for campaigns logged by earlier versions,
    ``legacy_hash()`` (computed only then).

    :raise UsageError: On changed settings.
    :raise CampaignError: On a damaged settings file or a changed library.
    """
    try:
        original = json.loads(saved.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CampaignError(f"{saved} is damaged ({error}); cannot check the settings") from None
    if not isinstance(original, dict):
        raise CampaignError(f"{saved} is damaged: expected a JSON object of settings")
    logged_hash = original.pop(LIBRARY_HASH, None)
    for key, value in LEGACY_SETTINGS.items():
        if key in settings:
            original.setdefault(key, value)
    changed = sorted(
        key
        for key in set(original) | set(settings)
        if key not in RESUMABLE and original.get(key) != settings.get(key)
    )
    if changed:
        details = ", ".join(f"{k}: {original.get(k)!r} -> {settings.get(k)!r}" for k in changed)
        raise UsageError(f"--resume needs the original settings (changed: {details})")
    if logged_hash in (None, library_hash) or (legacy_hash and logged_hash == legacy_hash()):
        return
    raise CampaignError(
        f"the library's content changed since this campaign ran ({saved}: {LIBRARY_HASH} "
        f"{str(logged_hash)[:12]}..., now {library_hash[:12]}...): its logged evaluations "
        "would be attached to the wrong candidates; restore the original library file"
    )
