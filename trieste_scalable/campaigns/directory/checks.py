"""What a campaign directory holds beside its log, and the checks a start or ``--resume`` makes
on it: ``run.json`` (the settings and the library's content hash) and ``rule_state.json``
(:mod:`trieste_scalable.acquisition.rule_state`), for
:mod:`~trieste_scalable.campaigns.run.session`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Optional

from ...acquisition import rule_state
from ...errors import CampaignError, UsageError
from ...problems.score_table import is_score_table
from ..migrations import hash_matches
from ..spec.campaign import CampaignSpec
from ..spec.library import ScreenSpec
from ..spec.record import LIBRARY_HASH, RunRecord, changed_settings, read_record
from .records import EvaluationLog

_log = logging.getLogger(__name__)

RULE_STATE = "rule_state.json"


def saved_rule_state(path: Path, logged_batches: int, rule: Any, algorithm: str) -> Any:
    """The rule state saved with the log (``None``, a fresh rule, when a campaign from before
    states were saved has none), for ``rule`` (``algorithm`` on the command line).

    :raise CampaignError: If the file is damaged, older than the log, or holds a state of
        another rule (naming the file, the rule and both state types).
    """
    if not path.is_file():
        _log.info(f"no {path.name}: the rule restarts from a fresh state")
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


def check_same_settings(
    saved: Path, spec: CampaignSpec, needs: str = "--resume needs"
) -> RunRecord:
    """The record ``saved``, checked to hold ``spec``'s settings (bar
    :data:`~trieste_scalable.campaigns.spec.record.RESUMABLE`); a command checks them before it
    reads its library, and :func:`check_same_campaign` again with the library's hash.

    :param needs: How the error for changed settings begins.
    :raise UsageError: On changed settings, naming them.
    :raise CampaignError: On a damaged settings file.
    """
    original = read_record(saved)
    changed = changed_settings(original.spec, spec)
    if changed:
        details = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in changed.items())
        raise UsageError(f"{needs} the original settings (changed: {details})")
    return original


def check_same_campaign(
    saved: Path,
    spec: CampaignSpec,
    library_hash: str,
    legacy_hash: Optional[Callable[[], str]] = None,
    needs: str = "--resume needs",
) -> None:
    """Check that a resumed campaign has its original settings (bar
    :data:`~trieste_scalable.campaigns.spec.record.RESUMABLE`) and library: its logged hash is
    ``library_hash`` or, for campaigns logged by earlier versions, ``legacy_hash()`` (computed only
    then).

    :param needs: How the error for changed settings begins.
    :raise UsageError: On changed settings.
    :raise CampaignError: On a damaged settings file or a changed library.
    """
    logged_hash = check_same_settings(saved, spec, needs).library_hash
    if hash_matches(logged_hash, library_hash, legacy_hash):
        return
    what, restore = "the library's content", "the original library file"
    if isinstance(spec, ScreenSpec) and is_score_table(spec.objective):
        table = spec.objective.removeprefix("table:")
        what = f"the library's content or the score table {table}"
        restore = "the original library file and score table"
    if getattr(spec, "space", None):
        what, restore = "the catalog's synthon files", "the original synthon files"
    elif getattr(spec, "reaction", None):
        what = "the make-on-demand space's reaction or reagents"
        other = "without" if getattr(spec, "keep_radicals", False) else "with"
        restore = f"the original reaction and reagent files, or resume {other} --keep-radicals"
    raise CampaignError(
        f"{what} changed since this campaign ran ({saved}: {LIBRARY_HASH} "
        f"{str(logged_hash)[:12]}..., now {library_hash[:12]}...): its logged evaluations "
        f"would be attached to the wrong candidates or scores; restore {restore}"
    )
