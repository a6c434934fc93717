"""experiments/in_context_rl.py: --quick writes its files with a regret bookkeeping that holds on
known policies and pretraining data without label leak; the claim rules on synthetic regret."""

import importlib.util
import pathlib

import numpy as np
import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "in_context_rl.py"


def _load():
    spec = importlib.util.spec_from_file_location("in_context_rl", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_writes_results(run_quick):
    res = run_quick("in_context_rl.py", timeout=280)
    assert set(res["arms"]) == {"dpt", "thompson", "ucb1", "uniform"}
    # Uniform arms on means ~ U[0, 1]^5 lose E[max] − E[mean] = 5/6 − 1/2 = 1/3 per pull.
    per_pull = res["arms"]["uniform"]["mean"] / res["settings"]["horizon"]
    assert abs(per_pull - 1 / 3) < 0.06
    assert res["arms"]["thompson"]["mean"] < 0.6 * res["arms"]["uniform"]["mean"]
    assert abs(res["label_leak"] - 0.2) < 0.03  # the context's actions do not reveal the label
    assert set(res["claims"]) == {"dpt_matches_thompson", "dpt_learns_in_context"}


def test_claims_on_synthetic_regret():
    mod = _load()
    rng = np.random.default_rng(0)
    t = np.arange(1, 51)
    decay = 0.3 / np.sqrt(t)  # per-pull regret that falls within the episode

    def arm(scale):
        return scale * decay[None, None] * rng.uniform(0.9, 1.1, (5, 100, 50))

    regret = {"dpt": arm(1.05), "thompson": arm(1.0), "ucb1": arm(1.5), "uniform": arm(3.0)}
    cl = mod.claims(regret, 50)
    assert cl["dpt_matches_thompson"]["status"] == "reproduced"
    assert cl["dpt_learns_in_context"]["status"] == "reproduced"
    regret["dpt"] = 2.0 * np.ones((5, 100, 50)) * 0.1
    cl = mod.claims(regret, 50)
    assert cl["dpt_matches_thompson"]["status"] == "contradicted"
    assert cl["dpt_learns_in_context"]["status"] == "not at this scale"
