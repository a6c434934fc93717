"""scripts/final_return_iqm.py: the IQM row of a summary.json, and a one-line error."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "scripts/final_return_iqm.py", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip


def test_row_and_bad_workdir(tmp_path):
    finals = [[100.0, 200.0, 300.0, 400.0, 1000.0, 0.0, 250.0, 260.0]]
    summary = {"title": "pqn CartPole-v1", "final_score": finals, "compile_s": 3.2, "run_s": 41}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    out = _run(str(tmp_path))
    assert out.returncode == 0, out.stderr
    row = out.stdout.splitlines()[2]
    # IQM of 8 runs: the mean of the middle four (200, 250, 260, 300) = 252.5; mean 313.75.
    assert row.startswith("| pqn CartPole-v1 | 8 | 252.5 [") and "| 313.8 [" in row
    assert row.endswith("| 0.0 | 3 | 41 |")
    bad = _run(str(tmp_path / "missing"))
    assert (
        bad.returncode == 2 and bad.stderr.count("\n") == 1 and "has no summary.json" in bad.stderr
    )
