"""Molecular oracles that run on the workers of a distributed campaign: ``SMILES -> float``.

``trieste-scalable screen --workers N --objective SPEC`` evaluates ``SPEC`` on Ray workers,
one molecule per task (:mod:`trieste_scalable.cluster.evaluators`). ``SPEC`` is one of

- a built-in property (``celecoxib-mpo``, ``qed``, ``logp``): RDKit on the worker, higher is
  better;
- ``python:module:function``: any importable callable taking a SMILES and returning a float
  (or raising: a failed evaluation), higher is better unless ``--lower-is-better``;
- ``table:FILE[:COLUMN]``: a score table (:mod:`.score_table`), looked up on the worker
  (:class:`TableOracle`: a molecule without a score fails);
- ``dock:TARGET``: AutoDock Vina through ``dockstring`` (the ``[docking]`` extra) against any of
  its prepared targets (e.g. ``dock:DRD2``); the docking score is in kcal/mol, lower is better; a
  molecule that cannot be prepared or docked is a failed evaluation.

The oracles are small picklable objects that import what they need on the worker, so the
driver needs neither the user's module nor dockstring to start a campaign.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..chemistry.molecules import OBJECTIVES
from ..errors import UsageError
from ..problems.score_table import TableSpec, is_score_table
from .evaluators import checked_value


@dataclass(frozen=True)
class PropertyOracle:
    """A built-in RDKit property of one molecule (``OBJECTIVES``)."""

    name: str

    def __call__(self, smiles: str) -> float:
        from ..chemistry.molecules import parse

        molecules, _ = parse([smiles])  # raises on an unparseable SMILES
        return float(OBJECTIVES[self.name](molecules)[0])


@dataclass(frozen=True)
class TableOracle:
    """A score table's score of a library molecule, by its SMILES as the library spells it
    (the driver matched the table to the library by canonical SMILES once).

    :ivar scores: SMILES -> score, for the molecules the table scores.
    :ivar source: The table, named in the reason of a molecule it has no score for.
    """

    scores: dict[str, float]
    source: str

    @classmethod
    def of(cls, labels: Sequence[str], scores: np.ndarray, source: str) -> TableOracle:
        """The oracle of candidates ``labels`` [A] whose scores are ``scores`` [A] (NaN: none)."""
        return cls({str(s): float(v) for s, v in zip(labels, scores) if np.isfinite(v)}, source)

    def __call__(self, smiles: str) -> float:
        if smiles not in self.scores:
            raise LookupError(f"{self.source} has no score for this molecule")
        return self.scores[smiles]


@dataclass(frozen=True)
class PythonOracle:
    """``module:function``, imported on the worker at the first call."""

    module: str
    function: str

    def __call__(self, smiles: str) -> float:
        return float(resolve(self.module, self.function)(smiles))


@dataclass(frozen=True)
class DockingOracle:
    """The Vina docking score of one molecule against a ``dockstring`` target (kcal/mol)."""

    target: str

    def __call__(self, smiles: str) -> float:
        # dockstring runs openbabel's ``obabel``, which openbabel-wheel installs beside python
        bin_dir = os.path.dirname(sys.executable)
        if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
            os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
        from dockstring import load_target
        from rdkit import Chem

        if Chem.MolFromSmiles(smiles) is None:  # dockstring fails obscurely on these
            raise ValueError(f"cannot dock an unparseable SMILES {smiles!r}")
        score, _ = load_target(self.target).dock(smiles, num_cpus=1)
        if score is None:
            raise RuntimeError(f"dockstring returned no score for {smiles}")
        return float(score)


@dataclass(frozen=True)
class Oriented:
    """``oracle`` as the observation Trieste minimises: its value, negated when higher is
    better (what runs on the workers; the log keeps the oracle's own value too)."""

    oracle: Callable[[str], float]
    higher_is_better: bool

    def __call__(self, smiles: str) -> float:
        value = checked_value(self.oracle(smiles))  # a failure names the oracle's own value
        return -value if self.higher_is_better else value

    def score(self, observed: float) -> float:
        """The oracle's value of an observation."""
        return -observed if self.higher_is_better else observed


def _import(module: str) -> Any:
    """``module``, found in the working directory too, as ``python -m`` finds it (the console
    script's path starts at its own directory; Ray's workers get the driver's)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        here = os.getcwd()
        if here in sys.path or "" in sys.path:
            raise
        sys.path.insert(0, here)
        return importlib.import_module(module)


def resolve(module: str, function: str) -> Callable[[str], float]:
    """The callable ``module.function``.

    :raise UsageError: If the module cannot be imported or has no such callable.
    """
    try:
        found: Any = getattr(_import(module), function)
    except (ImportError, AttributeError) as error:
        raise UsageError(f"cannot load objective {module}:{function} ({error})") from None
    if not callable(found):
        raise UsageError(f"objective {module}:{function} is not callable")
    return found  # type: ignore[no-any-return]


def oracle_for(spec: str, lower_is_better: bool = False) -> Oriented:
    """The oracle of an ``--objective`` value (module docstring), checked on the driver: the
    user's function imports and dockstring knows the target.

    :raise UsageError: On an unknown or unloadable objective, or a score table (its oracle is
        :meth:`TableOracle.of` the library's matched scores).
    """
    if is_score_table(spec):
        raise ValueError("a score table's oracle is made from the library: TableOracle.of")
    if is_table_objective(spec):
        return Oriented(PropertyOracle(spec), not lower_is_better)
    kind, _, rest = spec.partition(":")
    if kind == "python":
        module, _, function = rest.rpartition(":")
        if not module or not function:
            raise UsageError(f"expected python:module:function, got {spec!r}")
        resolve(module, function)
        return Oriented(PythonOracle(module, function), not lower_is_better)
    _check_docking_target(rest)
    return Oriented(DockingOracle(rest), False)


def _check_docking_target(target: str) -> None:
    try:
        from dockstring import list_all_target_names
    except ImportError:
        raise UsageError(
            "docking needs dockstring and openbabel: pip install 'trieste-scalable[docking]'"
        ) from None
    if target not in list_all_target_names():
        raise UsageError(f"dockstring has no target {target!r} (it has e.g. DRD2, ESR1, PARP1)")


def is_table_objective(spec: str) -> bool:
    """Whether the objective is a built-in property or a score table, known for the whole
    library up front (so recall can be scored); other objectives are only known where
    evaluated.

    :raise UsageError: If ``spec`` is none of the four kinds (module docstring), or names a
        score table that is not a file.
    """
    if spec in OBJECTIVES:
        return True
    if is_score_table(spec):
        TableSpec.parse(spec)
        return True
    if spec.partition(":")[0] in ("python", "dock"):
        return False
    raise UsageError(
        f"unknown objective {spec!r}: one of {sorted(OBJECTIVES)}, table:FILE[:COLUMN], "
        "python:module:function or dock:TARGET"
    )
