"""rljax.train.lm_report: tables that match the evaluation summaries, and the plot files."""

import json

import numpy as np

from rljax.lm.tasks import evaluation
from rljax.train import lm_report


def _results():
    correct = np.array([[1, 0, 0, 0], [1, 1, 1, 1]])
    answers = [["7", "8", "9", "1"], ["3", "3", "3", "3"]]
    base = evaluation.summarize(correct, answers, np.array([1, 2]))
    rl = evaluation.summarize(np.ones_like(correct), answers, np.array([1, 2]))
    return {"base": base, "RL": rl}


def test_tables_carry_every_pass_at_k_and_the_extras(tmp_path):
    results = _results()
    markdown = lm_report.write_tables(results, {"task": "arithmetic"}, str(tmp_path))
    lines = markdown.splitlines()
    assert lines[0] == "| model | pass@1 | pass@2 | pass@4 | distinct correct | pass@1 by level |"
    assert lines[1] == "|---|---|---|---|---|---|"
    base_row = lines[2].split("|")
    assert base_row[1].strip() == "base"
    assert float(base_row[2]) == results["base"]["pass_at_k"]["pass"][0]  # 0.625
    assert "L1: 0.25, L2: 1.00" in lines[2]
    assert "- task: arithmetic" in markdown
    assert (tmp_path / "results.md").read_text() == markdown
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["task"] == "arithmetic" and set(saved["results"]) == {"base", "RL"}


def test_plots_are_written(tmp_path):
    lm_report.plot_pass_at_k(_results(), str(tmp_path / "pass_at_k.png"), "title")
    rows = [{"update": u, "reward/mean": 0.1 * u, "entropy": 1.0 / u} for u in (1, 2, 3)]
    rows[-1]["eval/pass@1"] = 0.5
    lm_report.plot_training(rows, str(tmp_path / "training.png"))
    for name in ("pass_at_k.png", "training.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
