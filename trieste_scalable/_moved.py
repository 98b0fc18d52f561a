"""Import paths of modules that moved when the package root was given its layers (Ray's helpers
into :mod:`trieste_scalable.cluster`, the cache command beside the caches in
:mod:`trieste_scalable.problems`, the command's parser into :mod:`trieste_scalable.cli`). Each
old path still imports the module, with a ``DeprecationWarning``, for one release (0.1.x); it
goes in 0.2."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Optional, Sequence

MOVED = {
    "trieste_scalable.ray_cluster": "trieste_scalable.cluster.connection",
    "trieste_scalable.ray_reaper": "trieste_scalable.cluster.reaper",
    "trieste_scalable.campaigns.distributed": "trieste_scalable.cluster.evaluators",
    "trieste_scalable.campaigns.scoring_actors": "trieste_scalable.cluster.scoring_actors",
    "trieste_scalable.campaigns.actor_placement": "trieste_scalable.cluster.actor_placement",
    "trieste_scalable.cache_admin": "trieste_scalable.problems.cache_admin",
    "trieste_scalable.arguments": "trieste_scalable.cli.arguments",
}
"""Each old module path and where the module is now."""


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path of :data:`MOVED` as the module at its new path (the same module
    object, so ``isinstance`` and monkeypatching agree), warning once per import."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        """A spec for an old path; ``None`` for every other name."""
        return importlib.machinery.ModuleSpec(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The module at the new path, after the warning."""
        warnings.warn(
            f"{spec.name} moved to {MOVED[spec.name]}; import it from there (the old path goes "
            "in trieste-scalable 0.2)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing: the module ran at its new path."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
