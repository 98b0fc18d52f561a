"""The ``trieste-scalable`` command (also ``python -m trieste_scalable``).

- ``trieste-scalable screen``: a virtual-screening campaign over a molecular library
  (:func:`~trieste_scalable.campaigns.screen.screen` in Python);
- ``trieste-scalable optimize``: the same over a built-in synthetic problem;
- ``trieste-scalable propose`` and ``tell``: a prospective campaign, its scores from a lab as
  files (:mod:`~trieste_scalable.campaigns.prospective.campaign`);
- ``trieste-scalable featurise``: a sharded library store from SMILES files, for ``screen
  --library STORE`` (:mod:`~trieste_scalable.stores.store`);
- ``trieste-scalable cache``: the cache directory's entries by library, and pruning them
  (:mod:`~trieste_scalable.stores.cache_admin`).

Each campaign command's arguments become a typed specification
(:mod:`~trieste_scalable.campaigns.spec.campaign`, :func:`.arguments.spec_of`), checked as it is
built and completed by :func:`~trieste_scalable.campaigns.spec.defaults.resolved`; nothing
below this package sees ``argparse``.

The campaigns write ``evaluations.csv``, ``summary.png`` and TensorBoard logs to ``--logdir``
and can be continued after an interruption with ``--resume``.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import Optional, Sequence

from ..errors import CampaignError, UsageError
from .arguments import DEBUG, parser, spec_of

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # hide CUDA-plugin noise on CPUs


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command; exit codes: 0 done, 1 runtime failure, 2 usage error, 130 interrupted.
    An error is one line on stderr; with ``--debug`` (or ``TRIESTE_SCALABLE_DEBUG=1``) its
    traceback comes first."""
    args = parser().parse_args(argv)
    try:
        if args.command in ("featurise", "cache"):
            from .tools import cache, featurise

            return (featurise if args.command == "featurise" else cache)(args)
        if args.command == "tell":
            from ..campaigns.prospective.campaign import ProspectiveCampaign

            campaign = ProspectiveCampaign.open(args.logdir)
            campaign.tell(args.file, extra=args.extra, correct=args.correct)
            return 0
        _campaign(args)
        return 0
    except UsageError as error:
        _traceback(args)
        print(f"trieste-scalable: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a runtime failure: one clear line, not a traceback
        _traceback(args)
        print(f"trieste-scalable: error: {_describe(error)}", file=sys.stderr)
        kept = _logged(args)
        if kept:
            print(
                f"the {kept} evaluations logged are kept in {args.logdir}/evaluations.csv: fix "
                "the cause and continue with the same command plus --resume",
                file=sys.stderr,
            )
        return 1
    except KeyboardInterrupt:
        again = {
            "featurise": "every finished shard is kept; run the same command again to finish "
            "the store",
            "propose": "a batch is recorded whole or not at all; run the same command again",
            "tell": "a tell is logged whole or not at all; run the same tell again (if it says "
            "told already, it was logged)",
            "cache": "run the same command again",
        }.get(
            args.command,
            f"every finished batch is in {args.logdir}/evaluations.csv; continue with the same "
            "command plus --resume",
        )
        print(f"\ninterrupted: {again}", file=sys.stderr)
        return 130


def _traceback(args: argparse.Namespace) -> None:
    """The handled error's traceback, with ``--debug`` or ``TRIESTE_SCALABLE_DEBUG=1``."""
    if args.debug or os.environ.get(DEBUG) == "1":
        traceback.print_exc()


def _campaign(args: argparse.Namespace) -> None:
    """Run the campaign command's resolved specification (which may read a resumed
    ``run.json`` or a store's manifest, and fail)."""
    from ..campaigns.spec.campaign import OptimizeSpec
    from ..campaigns.spec.defaults import resolved
    from ..campaigns.spec.library import ProposeSpec, ScreenSpec

    spec = resolved(spec_of(args))
    if isinstance(spec, ProposeSpec):
        from ..campaigns.prospective.campaign import ProspectiveCampaign

        batch = ProspectiveCampaign.start(spec).propose()
        print(batch.path)
        print(
            f"fill in its score column ({len(batch.smiles)} molecules), then: trieste-scalable "
            f"tell {spec.logdir} {batch.path}",
            file=sys.stderr,
        )
    elif isinstance(spec, ScreenSpec):
        from ..campaigns.screen import run_screen

        run_screen(spec)
    elif isinstance(spec, OptimizeSpec):
        from ..campaigns.optimize import run_optimize

        run_optimize(spec)


def _logged(args: argparse.Namespace) -> int:
    """Rows of a new campaign's log after a failure (0 if it has none, for the other commands
    and for ``--resume``)."""
    path = Path(getattr(args, "logdir", "")) / "evaluations.csv"
    if args.command not in ("screen", "optimize") or args.resume or not path.is_file():
        return 0  # a resumed campaign's user knows its log (and a damaged one is named)
    with open(path) as handle:
        return max(sum(1 for line in handle if line.strip()) - 1, 0)


def _describe(error: Exception) -> str:
    """One line for a runtime failure (TensorFlow's messages span many lines)."""
    message = str(error).strip().splitlines()
    kind = "" if isinstance(error, (CampaignError, ValueError)) else f"{type(error).__name__}: "
    return kind + (message[0] if message else type(error).__name__)


if __name__ == "__main__":
    sys.exit(main())
