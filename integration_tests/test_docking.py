"""The docking oracle (the ``[docking]`` extra): one small molecule docked against DRD2 with
AutoDock Vina through dockstring, and a molecule that cannot be docked is a failure, not a
crash (slow: a docking takes seconds to a minute on one core)."""

import math

import pytest

pytest.importorskip("dockstring")

from trieste_scalable.evaluation.oracles import DockingOracle, oracle_for  # noqa: E402


@pytest.mark.slow
def test_docking_one_small_molecule() -> None:
    oracle = oracle_for("dock:DRD2")
    assert oracle.oracle == DockingOracle("DRD2") and not oracle.higher_is_better
    score = oracle("CCO")  # ethanol binds weakly: a few kcal/mol
    assert math.isfinite(score) and -8.0 < score < 0.0
    with pytest.raises(ValueError, match="unparseable"):
        oracle("not_a_molecule")


def test_unknown_docking_target_is_refused() -> None:
    with pytest.raises(ValueError, match="no target 'NOPE'"):
        oracle_for("dock:NOPE")
