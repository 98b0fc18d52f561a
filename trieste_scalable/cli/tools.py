"""The commands that are not campaigns: ``featurise`` (a library store) and ``cache`` (the cache
directory's entries, and pruning them)."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from ..errors import CampaignError, UsageError

CAMPAIGN_FILES = ("run.json", "evaluations.csv")
"""Files that make a directory a campaign's, where no store may be written."""


def featurise(args: argparse.Namespace) -> int:
    """``trieste-scalable featurise``: build or finish a library store; exit code 0."""
    from ..cluster.chunk_maps import RayChunkMap
    from ..stores.chunk_maps import ProcessChunkMap
    from ..stores.store_build import ChunkMap, build_store

    if args.shard_size < 1:
        raise UsageError(f"--shard-size must be positive, got {args.shard_size}")
    held = [name for name in CAMPAIGN_FILES if (Path(args.out) / name).exists()]
    if held:
        raise UsageError(
            f"--out {args.out} holds a campaign ({held[0]}): a store needs a directory of its own"
        )
    try:
        from rdkit import Chem  # noqa: F401

        if args.ray_address is not None:
            import ray  # noqa: F401
    except ImportError as error:
        extra = "molecules" if error.name and "rdkit" in error.name else "distributed"
        raise CampaignError(
            f"featurise needs {error.name}: pip install 'trieste-scalable[{extra}]'"
        ) from None
    with contextlib.ExitStack() as stack:
        if args.ray_address is None:  # this machine: worker processes, no Ray (chunk_maps)
            chunk_map: ChunkMap = stack.enter_context(ProcessChunkMap())
        else:
            chunk_map = RayChunkMap(args.ray_address)
        store = build_store(
            args.library,
            args.out,
            args.fingerprint,
            args.radius,
            args.fingerprint_width,
            shard_size=args.shard_size,
            chunk_map=chunk_map,
            progress=(lambda line: None) if args.quiet else print,
        )
    print(
        f"{args.out}: {store.num_rows} unique molecules in {len(store.manifest['shards'])} shards"
    )
    return 0


def cache(args: argparse.Namespace) -> int:
    """``trieste-scalable cache``: list or prune the cache directory's entries; exit code 0."""
    from ..stores import cache_admin as admin
    from ..stores.cache import cache_dir

    if not args.prune:
        used = ["dry_run"] if args.dry_run else []
        used += [name for name in ("older_than", "max_size") if getattr(args, name) is not None]
        if used:
            raise UsageError(
                f"--{used[0].replace('_', '-')} selects what --prune removes: add --prune"
            )
    directory = cache_dir()
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"the cache directory {directory} is a file (TRIESTE_SCALABLE_CACHE?)")
    found = admin.entries(directory)
    if args.library is not None:
        found = [entry for entry in found if args.library in entry.library]
    held = admin.held_files(directory)
    total = admin.human(sum(entry.size for entry in found))
    print(f"cache {directory}: {total} in {len(found)} entries")
    if not args.prune:
        if found:
            print(admin.listing(found, held))
        return 0
    if args.older_than is not None and not args.older_than >= 0:
        raise UsageError(f"--older-than must be a number of days >= 0, got {args.older_than}")
    try:
        max_size = None if args.max_size is None else admin.parse_size(args.max_size)
    except ValueError as error:
        raise UsageError(f"--max-size: {error}") from None
    if args.library is None and args.older_than is None and max_size is None:
        raise UsageError("--prune needs --library, --older-than or --max-size")
    if held is None:
        raise CampaignError("cannot tell which entries running processes hold here (no /proc)")
    chosen = admin.select(found, args.older_than, max_size)  # found: --library's entries
    removed, kept = admin.remove(chosen, held, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    freed = admin.human(sum(entry.size for entry in removed))
    print(f"{verb} {len(removed)} entries ({freed})")
    if kept:
        print(f"kept {len(kept)} entries that running processes hold:")
        print(admin.listing(kept, held))
    return 0
