"""experiments/estimator_audit.py: --quick writes its tables with finite statistics; bad flags
give one-line errors (the NFT ≡ GRPO identity it reports: tests/train/test_study_checks.py)."""

import importlib.util
import math
import pathlib

import numpy as np
import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "estimator_audit.py"


def _load():
    spec = importlib.util.spec_from_file_location("estimator_audit", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_writes_tables(run_quick, tmp_path):
    res = run_quick("estimator_audit.py")
    table = res["table"]
    assert len(table) == 9 * 4 * 3 * 2  # KL placements × aggregations × advantages × 2 group sizes
    for name, row in table.items():
        for key in ("cosine", "rel_error", "residual"):
            assert math.isfinite(row[key]["mean"]), (name, key)
    methods = {row["method"] for row in table.values()}
    assert methods == {"exact", "mc"}
    for arm in res["variance"].values():
        for s in arm.values():
            assert np.all(np.isfinite([s["mean"], *s["mean_ci"]]))
    assert all(math.isfinite(c["error_over_se"]) for c in res["check"])
    assert all(math.isfinite(v) for v in res["nft_identity"].values())
    text = (tmp_path / "results.md").read_text()
    assert "| KL | aggregation | adv |" in text


def test_bad_flags(bad_flag):
    assert "--max_len" in bad_flag("estimator_audit.py", "--max_len", "9")
    assert "--beta" in bad_flag("estimator_audit.py", "--beta", "0")
    assert "--seed=-1" in bad_flag("estimator_audit.py", "--seed", "-1")
