"""The core runs without the optional extras (RDKit: ``[molecules]``, matplotlib: ``[plots]``,
Ray: ``[distributed]``): a fresh interpreter in which importing any of them fails runs a BBKB
loop and the ``optimize`` command (no summary.png, and says why), and ``screen`` fails with
exit 1 naming the extra. The command line parses, and builds library stores, without TensorFlow."""

import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import sys

class Block:  # importing an extra's package fails, as when the extras are not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("rdkit", "matplotlib", "ray"):
            raise ImportError(f"No module named {name!r} (blocked)")
        return None

sys.meta_path.insert(0, Block())
import numpy as np
import tensorflow as tf
import trieste
from trieste.data import Dataset
from trieste.space import DiscreteSearchSpace
from trieste_scalable.acquisition import BBKB
from trieste_scalable.cli import main
from trieste_scalable.models import build_nystrom_gpr

points = tf.constant(np.random.default_rng(0).uniform(size=(200, 2)))
space = DiscreteSearchSpace(points)
observer = trieste.objectives.utils.mk_observer(lambda x: tf.reduce_sum(x**2, -1, keepdims=True))
data = observer(points[:5])
model = build_nystrom_gpr(data, space)
result = trieste.bayesian_optimizer.BayesianOptimizer(observer, space).optimize(
    3, data, model, BBKB(width="constant"), track_state=False
)
assert result.final_result.is_ok
assert not {"rdkit", "matplotlib", "ray"} & set(sys.modules)
logdir = sys.argv[1]
code = main(["optimize", "--budget", "12", "--quiet", "--logdir", logdir + "/opt"])
assert code == 0, code
code = main(["screen", "--budget", "5", "--quiet", "--logdir", logdir + "/screen"])
assert code == 1, code
print("core ran without the extras")
"""


def test_core_runs_without_rdkit_and_matplotlib(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "core ran without the extras" in done.stdout
    assert "no summary.png: matplotlib is not installed" in done.stdout
    assert "screening needs RDKit: pip install 'trieste-scalable[molecules]'" in done.stderr
    assert (tmp_path / "opt" / "evaluations.csv").is_file()
    assert not (tmp_path / "opt" / "summary.png").exists()


LIGHT_SCRIPT = r"""
import sys
from trieste_scalable.campaigns.spec.defaults import resolved
from trieste_scalable.cli.arguments import parser, spec_of
from trieste_scalable.stores.store_build import build_store

for argv in (["screen", "--budget", "5"], ["optimize", "--problem", "grid3"]):
    spec = resolved(spec_of(parser().parse_args(argv)))
    assert spec.algorithm in ("gp-bucb", "bbkb"), spec
source, out = sys.argv[1], sys.argv[2]
store = build_store([source], out, shard_size=2)
assert store.num_rows == 3, store.num_rows
loaded = sorted({"tensorflow", "trieste", "gpflow"} & set(sys.modules))
assert not loaded, loaded
print("no TensorFlow")
"""


def test_parsing_and_building_a_store_load_no_tensorflow(tmp_path: Path) -> None:
    """The command line checks its arguments, and ``featurise`` builds a store, without loading
    TensorFlow (7 s of a 15 s ``featurise`` of 100,000 molecules, when it did)."""
    source = tmp_path / "library.smi"
    source.write_text("CCO\nc1ccccc1\nCC(=O)O\n")
    done = subprocess.run(
        [sys.executable, "-c", LIGHT_SCRIPT, str(source), str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "no TensorFlow" in done.stdout
