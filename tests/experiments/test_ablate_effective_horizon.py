"""experiments/ablate_effective_horizon.py: --quick writes its tables and plots, finite stats."""

import importlib.util
import json
import math
import pathlib

import numpy as np
import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "ablate_effective_horizon.py"


def _load():
    spec = importlib.util.spec_from_file_location("ablate_effective_horizon", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_writes_results(tmp_path):
    mod = _load()
    mod.STUDY.main(["--quick", "--workdir", str(tmp_path)])
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["verdict"] in ("reproduced", "partly", "not at this scale", "contradicted")
    # 2 envs × (5 SQIRL levels + PPO + DQN) headline arms with finite summaries.
    assert len(res["arms"]) == 14
    for s in res["arms"].values():
        assert s["n"] == 2 and all(math.isfinite(v) for v in [s["mean"], *s["mean_ci"]])
    assert set(res["tabular"]) == {"Catch-bsuite", "DeepSea-bsuite-6"}
    assert res["tabular"]["Catch-bsuite"]["min_qvi_steps"] == 0
    assert "sqirl vs ppo" in res["spearman"]
    assert "**Verdict:" in (tmp_path / "results.md").read_text()
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "curves_Catch-bsuite.png",
        "curves_DeepSea-bsuite-6.png",
    ]


def test_steps_to_threshold_and_spearman():
    mod = _load()
    evals = np.array([[0.0, 0.5, 0.9], [0.0, 0.1, 0.2]])
    hits = mod.steps_to_threshold(evals, np.array([10, 20, 30]), 0.5)
    assert hits[0] == 20 and np.isinf(hits[1])
    assert mod.spearman([1, 2, np.inf], [3, 4, 5]) == pytest.approx(1.0)
    assert math.isnan(mod.spearman([1, 1, 1], [1, 2, 3]))


def test_bad_flags():
    mod = _load()
    with pytest.raises(SystemExit):
        mod.STUDY.parse(["--envs", "Pong"])
    with pytest.raises(SystemExit):
        mod.STUDY.parse(["--seeds", "1"])
