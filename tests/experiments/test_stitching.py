"""experiments/stitching.py: the unseen split has no co-occurring pair; --quick writes its files;
the claim rules on synthetic numbers."""

import importlib.util
import pathlib

import numpy as np
import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "stitching.py"


def _load():
    spec = importlib.util.spec_from_file_location("stitching", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_split_is_clean_and_writes_results(run_quick, tmp_path):
    res = run_quick("stitching.py", timeout=280)
    assert res["unseen_co_occurring"] == 0  # no test pair shares a training trajectory
    assert res["num_unseen_pairs"] > 0
    assert set(res["arms"]) == {"gcbc", "gcbc+aug", "gc-q", "gc-q tabular"}
    for name, s in res["seen_pairs"].items():  # every learner learned something in distribution
        assert s["mean"] > 0.2, name
    assert set(res["claims"]) == {"td_stitches", "augmentation_helps", "augmentation_closes_gap"}
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "success_by_distance.png",
        "success_unseen.png",
    ]


@pytest.mark.slow
def test_claims_on_synthetic_success():
    mod = _load()
    rng = np.random.default_rng(0)
    noise = lambda: rng.normal(0, 0.01, 5)  # noqa: E731
    final = {"gcbc": 0.1 + noise(), "gcbc+aug": 0.5 + noise(), "gc-q": 0.55 + noise(),
             "gc-q tabular": 0.52 + noise()}  # fmt: skip
    cl = mod.claims(final)
    assert [c["status"] for c in cl.values()] == ["reproduced"] * 3
    final["gc-q"] = 0.05 + noise()  # the MLP learner fails, the table stitches: partly
    cl = mod.claims(final)
    assert cl["td_stitches"]["status"] == "partly"
    assert cl["augmentation_closes_gap"]["status"] == "reproduced"
    final["gc-q tabular"] = 0.0 + noise()
    assert mod.claims(final)["td_stitches"]["status"] == "contradicted"


@pytest.mark.slow
def test_bad_flag_is_named(bad_flag):
    err = bad_flag("stitching.py", "--rooms=2")
    assert "--rooms" in err
