"""The ``trieste-scalable`` command's parser. The campaign commands' options are generated from
their specifications' fields (:mod:`~trieste_scalable.campaigns.spec.campaign`), so the command
line and :func:`~trieste_scalable.campaigns.screen.screen` take the same settings with the same
defaults and help; :func:`spec_of` turns parsed arguments into a specification."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, get_origin, get_type_hints

from .. import __version__
from ..campaigns.spec.campaign import CampaignSpec
from ..campaigns.spec.fields import base_type, flags_of
from ..campaigns.spec.record import SPECIFICATIONS, read_record
from ..chemistry.molecules import DEFAULT_FINGERPRINT, DEFAULT_RADIUS, DEFAULT_WIDTH, FINGERPRINTS

DEBUG = "TRIESTE_SCALABLE_DEBUG"
"""The environment variable that, set to 1, prints an error's traceback as ``--debug`` does."""
HELP = {
    "screen": "screen a molecular library",
    "optimize": "optimise a built-in noisy problem",
    "propose": "a prospective campaign: write the next batch of molecules to score (a CSV)",
}


def parser() -> argparse.ArgumentParser:
    """The command line: ``screen`` and ``optimize`` (from their specifications), ``featurise``
    and ``cache``."""
    parser = argparse.ArgumentParser(
        prog="trieste-scalable", description="Scalable GP Bayesian optimisation with Trieste."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"on an error, print its traceback too (or set {DEBUG}=1)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command, spec_type in SPECIFICATIONS.items():
        add_settings(commands.add_parser(command, help=HELP[command]), spec_type)
    tell = "tell a prospective campaign the scores of a filled-in batch (CSV/TSV)"
    _tell(commands.add_parser("tell", help=tell))
    store = "build a sharded library store from SMILES files (on Ray)"
    _featurise(commands.add_parser("featurise", help=store))
    cache = "list the cache directory's entries by library and kind, or prune them"
    _cache(commands.add_parser("cache", help=cache))
    return parser


def add_settings(parser: argparse.ArgumentParser, spec_type: type[CampaignSpec]) -> None:
    """One option of ``parser`` for each setting of ``spec_type``: its flags, type, choices,
    default and help (a ``bool`` is a switch), in its argument group if it has one. A command
    that continues its directory's campaign (``propose``) leaves out the settings not given, so
    :func:`spec_of` can take the directory's own."""
    hints = get_type_hints(spec_type)
    groups: dict[str, Any] = {}
    for spec_field in offered(spec_type):
        meta, kind = spec_field.metadata, base_type(hints[spec_field.name])[0]
        group = meta.get("group")
        target = groups.setdefault(group, parser.add_argument_group(group)) if group else parser
        options: dict[str, Any] = dict(dest=spec_field.name)
        options["help"] = spec_type.help_of(spec_field.name)
        options["default"] = argparse.SUPPRESS if spec_type.continues else spec_field.default
        if kind is bool:
            options["action"] = "store_true"
        elif get_origin(kind) is tuple:  # one or more paths
            options.update(nargs="+", type=str, metavar="FILE")
        else:
            options["type"] = kind
            if meta.get("choices"):
                options["choices"] = meta["choices"]
        target.add_argument(*flags_of(spec_field), **options)


def spec_of(args: argparse.Namespace) -> CampaignSpec:
    """The specification of a campaign command's parsed arguments (checked as it is built).

    :raise UsageError: On a bad setting, naming it.
    """
    spec_type = SPECIFICATIONS[args.command]
    given = {f.name: getattr(args, f.name) for f in offered(spec_type) if hasattr(args, f.name)}
    if spec_type.continues:
        given = {**_directory_settings(spec_type, given), **given}
    return spec_type(**given)


def _directory_settings(spec_type: type[CampaignSpec], given: dict[str, Any]) -> dict[str, Any]:
    """The settings of the campaign of ``spec_type`` in the directory ``given`` names (none if
    it holds none, or one of another command: the campaign refuses it)."""
    logdir = Path(given.get("logdir", _field_default(spec_type, "logdir")))
    if not (logdir / "run.json").is_file():
        return {}
    saved = read_record(logdir / "run.json").spec
    if type(saved) is not spec_type:
        return {}
    return {f.name: getattr(saved, f.name) for f in offered(spec_type)}


def _field_default(spec_type: type[CampaignSpec], name: str) -> Any:
    return next(f.default for f in dataclasses.fields(spec_type) if f.name == name)


def offered(spec_type: type[CampaignSpec]) -> list[dataclasses.Field]:
    """The settings of ``spec_type`` its command offers (all but its ``not_offered``)."""
    return [f for f in dataclasses.fields(spec_type) if f.name not in spec_type.not_offered]


def _tell(tell: argparse.ArgumentParser) -> None:
    tell.add_argument("logdir", help="the campaign directory propose wrote to")
    tell.add_argument(
        "file",
        help="the filled-in batch: a CSV, TSV or ;-separated file with smiles and score "
        "columns (those propose wrote, or at least those two); an empty score or a word "
        "(n/a, failed) is a failed evaluation, a score with units or other text refuses the "
        "file",
    )
    which = tell.add_mutually_exclusive_group()
    which.add_argument(
        "--extra",
        action="store_true",
        help="molecules the campaign did not propose (e.g. analogues made outside the "
        "library) are logged and told to the model, marked as extra, instead of refused",
    )
    which.add_argument(
        "--correct",
        action="store_true",
        help="the file corrects molecules told before: each row a logged molecule and its "
        "score (a failed evaluation measured later, a typo fixed), kept in corrections.csv; "
        "the next propose uses them",
    )


def _featurise(store: argparse.ArgumentParser) -> None:
    store.add_argument("library", nargs="+", help=".smi or .csv files (optionally .gz)")
    store.add_argument("--out", required=True, help="the store's directory")
    store.add_argument(
        "--fingerprint",
        default=DEFAULT_FINGERPRINT,
        choices=list(FINGERPRINTS),
        help=f"default {DEFAULT_FINGERPRINT}, screen's default (the store screen's defaults want)",
    )
    store.add_argument(
        "--radius", type=int, default=DEFAULT_RADIUS, help="Morgan fingerprints' radius"
    )
    store.add_argument(
        "--fingerprint-width",
        type=int,
        default=DEFAULT_WIDTH,
        help=f"fingerprint bits (default {DEFAULT_WIDTH}; counts take 3 bits a feature)",
    )
    store.add_argument("--shard-size", type=int, default=1_000_000, help="molecules per shard")
    store.add_argument(
        "--ray-address",
        default=None,
        help="a Ray cluster to fingerprint on (default: worker processes on this machine)",
    )
    store.add_argument("--quiet", action="store_true", help="no progress lines")


def _cache(cache: argparse.ArgumentParser) -> None:
    cache.add_argument("--library", default=None, help="only entries of libraries naming this")
    cache.add_argument("--prune", action="store_true", help="remove the entries selected")
    cache.add_argument(
        "--older-than", type=float, default=None, metavar="DAYS", help="last used before"
    )
    cache.add_argument(
        "--max-size", default=None, metavar="SIZE",
        help="remove the least recently used entries until the cache takes at most SIZE "
        "(e.g. 20G)",
    )  # fmt: skip
    cache.add_argument("--dry-run", action="store_true", help="say what --prune would remove")
