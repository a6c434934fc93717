"""Smoke test of experiments/kl_bayes.py at a tiny budget: files, schema and the main claims."""

import importlib.util
import json
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "kl_bayes.py"


@pytest.mark.timeout(240)
def test_kl_bayes_script_tiny(tmp_path):
    spec = importlib.util.spec_from_file_location("kl_bayes_script", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    methods = "no_kl,k1_in_reward"
    argv = ["--outdir", str(tmp_path), "--steps", "150", "--batch", "64", "--methods", methods]
    mod.main([*argv, "--lr", "0.1"])
    for name in ("results.md", "results.json", "kl_bayes.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    res = json.loads((tmp_path / "results.json").read_text())["results"]
    assert set(res) == {"no_kl", "k1_in_reward"}
    # Even at this budget: no KL collapses (entropy far below π*'s), KL-in-reward tracks π*.
    assert res["no_kl"]["entropy_final"] < 1.0
    assert res["k1_in_reward"]["kl_to_target_final"] < 0.05
    assert res["no_kl"]["kl_to_target_final"] > 1.0


def test_kl_bayes_bad_flag_message(tmp_path):
    spec = importlib.util.spec_from_file_location("kl_bayes_script2", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(SystemExit):
        mod.main(["--outdir", str(tmp_path), "--beta", "0"])
    with pytest.raises(SystemExit):
        mod.main(["--outdir", str(tmp_path), "--methods", "k4"])
