"""Final-return IQM and mean with 95% stratified-bootstrap intervals of finished training runs.

    python scripts/final_return_iqm.py runs/pqn_CartPole-v1 runs/iqn_CartPole-v1

Reads each workdir's summary.json (written by experiments/train.py: the final return of every
seed, the mean return of its training episodes over the last 5% of the run) and prints one
markdown row per workdir and grid point: seeds, IQM [95% CI], mean [95% CI], min, compile and run
seconds (``rljax.stats.summarize``; seeds resampled within the run).
"""

import argparse
import json
import os
import sys

from rljax import stats


def rows(workdir: str) -> list[str]:
    """Markdown table rows of one run's ``summary.json``; a ValueError names a bad workdir."""
    path = os.path.join(workdir, "summary.json")
    if not os.path.isfile(path):
        raise ValueError(f"{workdir!r} has no summary.json; allowed: a finished run's --workdir")
    with open(path) as f:
        summary = json.load(f)
    out = []
    secs = [summary.get(k, float("nan")) for k in ("compile_s", "run_s")]
    finals_by_grid = summary.get("final_score", summary.get("final_return"))  # older: final_return
    for g, finals in enumerate(finals_by_grid):
        s = stats.summarize(finals)
        out.append(
            f"| {summary['title']}{f' · grid {g}' if len(finals_by_grid) > 1 else ''} "
            f"| {s['n']} | {stats.format_interval(s, 'iqm', 1)} | "
            f"{stats.format_interval(s, 'mean', 1)} | {min(finals):.1f} | "
            f"{secs[0]:.0f} | {secs[1]:.0f} |"
        )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdirs", nargs="+")
    args = parser.parse_args(argv)
    print("| run | seeds | final return IQM [95% CI] | mean [95% CI] | min | compile s | run s |")
    print("|---|---|---|---|---|---|---|")
    try:
        for workdir in args.workdirs:
            print("\n".join(rows(workdir)))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
