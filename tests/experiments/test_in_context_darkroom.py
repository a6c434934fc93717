"""experiments/in_context_darkroom.py: --quick keeps the held-out goals out of pretraining, its
contexts goal-free and its labels optimal, with references whose returns hold by hand; the claim
rules on synthetic returns."""

import importlib.util
import pathlib

import numpy as np
import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "in_context_darkroom.py"


def _load():
    spec = importlib.util.spec_from_file_location("in_context_darkroom", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_keeps_the_study_invariants(run_quick):
    res = run_quick("in_context_darkroom.py", timeout=280)
    inv = res["invariants"]
    assert inv["heldout_goals_in_pretraining"] == 0 and inv["pretraining_tasks_checked"] > 0
    assert inv["labels_optimal_share"] == 1.0
    assert inv["context_independent_of_goal"] is True
    side, h = res["settings"]["side"], res["settings"]["horizon"]
    assert len(res["heldout_goals"]) == 3 and all(len(g) == 5 for g in res["heldout_goals"])
    # H >= side²: the sweep finds every goal in episode 1 and is the oracle from episode 2 on
    assert h >= side**2
    curves = res["curves"]
    np.testing.assert_allclose(curves["sweep"][1:], curves["oracle"][1:])
    assert curves["sweep"][0] < curves["oracle"][0]
    assert max(curves["uniform"]) < 0.5 * min(curves["oracle"])
    assert set(res["claims"]) == {"dpt_improves_online", "dpt_beats_random"}


def test_claims_on_synthetic_returns():
    mod = _load()
    rng = np.random.default_rng(0)
    rising = np.array([3.0, 12.0, 15.0, 16.0])  # return per episode

    def arm(curve):
        return curve[None, None] * rng.uniform(0.9, 1.1, (3, 50, 4))

    ret = {"dpt": arm(rising), "oracle": arm(np.full(4, 21.0)), "sweep": arm(rising),
           "uniform": arm(np.full(4, 1.0))}  # fmt: skip
    cl = mod.claims(ret)
    assert cl["dpt_improves_online"]["status"] == "reproduced"
    assert cl["dpt_beats_random"]["status"] == "reproduced"
    ret["dpt"] = arm(np.array([2.0, 1.0, 0.8, 0.5]))
    cl = mod.claims(ret)
    assert cl["dpt_improves_online"]["status"] == "contradicted"
    assert cl["dpt_beats_random"]["status"] == "contradicted"


def test_tasks_cycle_evenly_through_each_seed_s_goals():
    mod = _load()
    held = np.asarray([[3, 8, 11, 19, 24], [0, 1, 2, 3, 4]])
    tasks = np.asarray(mod.tile_goals(held, 12))
    for s in range(2):
        np.testing.assert_array_equal(np.bincount(tasks[s], minlength=25)[held[s]], [3, 3, 2, 2, 2])
        assert set(tasks[s].tolist()) == set(held[s].tolist())
