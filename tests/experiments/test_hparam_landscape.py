"""experiments/hparam_landscape.py: --quick writes its tables and plot with finite statistics."""

import importlib.util
import json
import math
import pathlib

import numpy as np
import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "hparam_landscape.py"


def _load():
    spec = importlib.util.spec_from_file_location("hparam_landscape", SCRIPT)
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
    env = res["envs"]["CartPole-v1"]
    assert len(env["configs"]) == 24 + 20 and len(env["tuning_scores"]) == 44
    assert all(math.isfinite(v) for v in env["tuning_scores"])
    assert math.isfinite(env["seed_split_rho"]["rho"])
    assert set(env["importance"]) == set(mod.SPACE)
    for s in res["arms"].values():
        assert all(math.isfinite(v) for v in [s["mean"], *s["mean_ci"], s["iqm"]])
    assert (tmp_path / "results.md").stat().st_size > 0
    assert (tmp_path / "landscape_CartPole-v1.png").stat().st_size > 0


def test_successive_halving_and_budget():
    mod = _load()
    # 8 configs, 4 rungs: config 5 is best at the end but worst early -> SH drops it.
    scores = np.tile(np.arange(8.0)[:, None], (1, 4))
    scores[5] = [-1.0, -1.0, -1.0, 100.0]
    assert mod.successive_halving(scores) == 7
    assert mod.sh_budget(64) == pytest.approx(20.0)
    configs = mod.sample_configs(50, {"lr": 0.0}, seed=0)
    lr = np.array([c["lr"] for c in configs])
    assert lr.min() >= 1e-4 and lr.max() <= 1e-2
    assert all(0.9 <= c["gamma"] <= 0.999 for c in configs)


def test_importance_finds_the_one_that_matters():
    mod = _load()
    configs = mod.sample_configs(200, {}, seed=1)
    score = np.log([c["lr"] for c in configs])
    imp = mod.importance(configs, score)
    assert imp["lr"]["explained"] > 0.8
    assert imp["vf_coef"]["explained"] < 0.2
