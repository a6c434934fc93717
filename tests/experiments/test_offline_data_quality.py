"""experiments/offline_data_quality.py: --quick writes its files with finite statistics; the
claim rules and the rank correlation on synthetic numbers."""

import importlib.util
import math
import pathlib

import numpy as np
import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "offline_data_quality.py"


def _load():
    spec = importlib.util.spec_from_file_location("offline_data_quality", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_writes_results(run_quick, tmp_path):
    res = run_quick("offline_data_quality.py", timeout=280)
    # 6 learners × {uniform, rw} headline arms; 5 CartPole datasets measured.
    assert len(res["arms"]) == 12
    data = res["datasets"]["CartPole-v1"]["datasets"]
    assert set(data) == {"random", "expert", "noisy", "replay", "mixed"}
    for m in data.values():
        assert math.isfinite(m["tq"]) and 0 < m["saco"] <= 1 and m["cells"] >= 1
    assert len(res["per_cell"]) == 6 * 2 * 5
    for c in res["rank_correlations"].values():
        assert set(c) == {"tq", "saco"}
    assert {"rw_helps_mixed", "dqn_family_needs_saco"} <= set(res["claims"])
    for c in res["claims"].values():
        assert c["status"] in ("holds", "tie", "fails") and math.isfinite(c["estimate"])
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert names == ["curves_CartPole-v1_mixed.png", "quality_coverage.png"]


def _cells(rng, n_envs=3, seeds=5, dqn_slope=1.0, rw_gain=0.0):
    """Synthetic finals: DQN-family returns follow SACo with slope ``dqn_slope``."""
    mod = _load()
    c = n_envs * len(mod.DATASETS)
    tq = rng.uniform(0, 1, c)
    saco = rng.uniform(0, 1, c)
    final = {}
    for algo in mod.ALGOS:
        base = dqn_slope * saco if algo in ("dqn", "qr_dqn") else tq * saco
        if algo == "bc":
            base = tq
        for s in mod.SAMPLINGS:
            gain = rw_gain if s == "rw" else 0.0
            final[(algo, s)] = base[:, None] + gain + rng.normal(0, 0.02, (c, seeds))
    return mod, final, tq, saco


@pytest.mark.slow  # over ~12 s on the 2-core CPU
def test_claim_rules_on_synthetic_results():
    rng = np.random.default_rng(0)
    mod, final, tq, saco = _cells(rng, rw_gain=0.3)
    cl = mod.claims(final, tq, saco)
    assert cl["dqn_family_needs_saco"]["status"] == "holds"
    assert cl["rw_helps_mixed"]["status"] == "holds"
    assert cl["constraint_high_tq_saco"]["status"] == "holds"
    assert mod.study.Report("", "", cl, "", {}, "").verdict in ("reproduced", "partly")
    mod, final, tq, saco = _cells(rng, dqn_slope=-1.0, rw_gain=-0.3)
    cl = mod.claims(final, tq, saco)
    assert cl["dqn_family_needs_saco"]["status"] == "fails"
    assert cl["rw_helps_mixed"]["status"] == "fails"


def test_rank_correlation_interval_contains_the_estimate():
    mod = _load()
    rng = np.random.default_rng(1)
    x = np.arange(10.0)
    scores = x[:, None] + rng.normal(0, 0.1, (10, 4))
    r = mod.rank_correlation(scores, x)
    assert r["rho"] == pytest.approx(1.0) and r["ci"][0] > 0.8
    assert math.isnan(mod.spearman([1, 1, 1], [1, 2, 3]))


def test_bad_flags():
    mod = _load()
    for argv in (["--envs", "Pong"], ["--seeds", "2"], ["--rw-temperature", "0"]):
        with pytest.raises(SystemExit):
            mod.STUDY.parse(argv)
