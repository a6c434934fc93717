"""Benchmark: answers/s of the math checker (extraction + math-verify in worker processes).

    PYTHONPATH=$PWD python scripts/bench_math_checker.py [--answers=512] [--workers=1,2]
        [--timeout_s=2] [--repeats=3]

Completions are GSM8K-style texts ("... #### 42", "The answer is 42.") and MATH-style boxed
answers (fractions, sets, intervals, expressions), about half of them right, all distinct
(every check reaches math-verify). For each worker count it times the same answers three ways:
`cold` (a fresh checker, workers warm, empty cache), `cached` (the same answers again: LRU hits)
and `group` (GRPO-like groups of 8 completions in which 4 repeat one answer), each through
`Checker.judge` (the reward's path: every distinct text goes to a worker for extraction, then
every distinct pair not in the cache for its check). On a shared machine, compare worker counts
only within one run. The worst completions (one reward's time against the deadline) are
scripts/bench_math_hostile.py's.
"""

import sys
import time

from rljax import cli, machine
from rljax.lm.tasks.math_checker import Checker

_MATH = [
    ("\\frac{{{a}}}{{{b}}}", "{a}/{b}"),
    ("\\{{{a}, {b}\\}}", "\\{{{b}, {a}\\}}"),
    ("[{a}, {b})", "[{a},{b})"),
    ("{a}x+{b}", "{b}+{a}x"),
    ("\\sqrt{{{a}}}", "{a}^{{1/2}}"),
]


def completions(n: int) -> list[tuple[str, str]]:
    """`n` distinct (reference, completion text) pairs, half of them right."""
    pairs = []
    for i in range(n):
        a, b, right = 2 + i, 3 + 2 * i, i % 2 == 0
        if i % 3 == 0:
            answer = a * b if right else a * b + 1
            pairs.append((str(a * b), f"She buys {a} bags of {b}.\n#### {answer}"))
        elif i % 3 == 1:
            answer = a * b if right else a * b - 1
            pairs.append((str(a * b), f"So the total is {answer} apples."))
        else:
            gold, pred = _MATH[i % len(_MATH)]
            pred = pred if right else gold.replace("{a}", "{b}", 1)
            pairs.append(
                (
                    gold.format(a=a, b=b),
                    f"Hence $\\boxed{{{pred.format(a=a, b=b + (not right))}}}$.",
                )
            )
    return pairs


def grouped(pairs, group: int = 8):
    """GRPO-like: in each group of `group` completions, half repeat the group's first one."""
    out = []
    for start in range(0, len(pairs), group):
        chunk = pairs[start : start + group]
        out += [chunk[0] if j % 2 else p for j, p in enumerate(chunk)]
    return out


def timed(checker: Checker, pairs) -> float:
    """Answers/s of `checker.judge`, the reward's path (extraction and check in the workers)."""
    start = time.perf_counter()
    checker.judge([ref for ref, _ in pairs], [text for _, text in pairs])
    return len(pairs) / (time.perf_counter() - start)


def main(argv) -> int:
    p = cli.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--answers", type=int, default=512)
    p.add_argument("--workers", default="1,2")
    p.add_argument("--timeout_s", type=float, default=2.0)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    cli.check_int("--answers", args.answers, low=8)
    cli.check_int("--repeats", args.repeats, low=1)
    workers = [cli.check_int("--workers", int(w), low=1) for w in args.workers.split(",")]
    pairs = completions(args.answers)
    print(f"{machine.describe()}; {args.answers} answers, timeout {args.timeout_s} s")
    print("| workers | cold answers/s | cached answers/s | group answers/s | timeouts |")
    print("|---|---|---|---|---|")
    for _ in range(args.repeats):
        for w in workers:  # alternating worker counts, so load changes hit each alike
            with Checker(timeout_s=args.timeout_s, num_workers=w) as checker:
                checker.check([("1", "1")] * 1 + [("2", "2")] * (w > 1))  # start + warm up
                cold = timed(checker, pairs)
                cached = timed(checker, pairs)
            with Checker(timeout_s=args.timeout_s, num_workers=w) as checker:
                checker.check([("1", "1")] * 1 + [("2", "2")] * (w > 1))
                group = timed(checker, grouped(completions(args.answers + 7919)[-args.answers :]))
                timeouts = checker.stats["timeouts"]
            print(f"| {w} | {cold:,.0f} | {cached:,.0f} | {group:,.0f} | {timeouts} |", flush=True)
    return 0


if __name__ == "__main__":
    cli.main(lambda: main(sys.argv[1:]))
