"""Benchmark: the reward of the worst math completions found, against the checker's deadline.

    PYTHONPATH=$PWD python scripts/bench_math_hostile.py [--chars=1000,65536,1048576]
        [--timeout_s=1] [--before=<commit>] [--before_cap_s=20]

Each family is a (reference, completion text) pair built to be slow: runs of spaces (three
space-eating quantifiers in a backtracking pattern: cubic), unclosed `\\boxed{` (a brace count
from each: quadratic), deep and unbalanced braces, digit and comma runs, `####` spam, `\\frac`
chains, math-verify bombs inside prose, and answers of at most 256 characters that math-verify
chokes on (the same at every size). For each family and size it prints the time of
`math_answers.extract` alone and the wall time of the completion's reward as the training step
computes it (`Checker.judge`: extraction and check in a worker under one deadline; a fresh
checker cache, a warm worker), and at the end the worst reward time minus the deadline: the
constant the deadline is exceeded by.
`--before=<commit>` also times that commit's `math_answers.extract` (read with `git show`), each
call cut off after `--before_cap_s` seconds.
"""

import os
import subprocess
import sys
import tempfile
import time

from rljax import cli, machine
from rljax.lm.tasks import math_answers
from rljax.lm.tasks.math_checker import Checker

BOMB = "9^{9^{9^{9^{9}}}}"


def families(n: int) -> dict[str, tuple[str, str]]:
    """`{name: (reference, completion text)}`, each text about `n` characters."""
    return {
        "spaces in a boxed answer": ("7", "\\boxed{a" + " " * n + "!}"),
        "spaces after ####": ("7", "#### a" + " " * n + "!"),
        "words and spaces after ####": ("7", "#### " + "a " * (n // 2) + "5 x!"),
        "unclosed \\boxed{": ("7", "\\boxed{" * (n // 7)),
        "unclosed \\boxed{ with text": ("7", "\\boxed{x " * (n // 9)),
        "deep braces": ("7", "\\boxed{" + "{" * (n // 2) + "}" * (n // 2) + "}"),
        "unbalanced braces": ("7", "}" * (n // 2) + "\\boxed{" + "{" * (n // 2)),
        "\\boxed before spaces": ("7", "\\boxed " + " " * n),
        "digit run": ("7", "1" * n),
        "comma groups": ("7", "1,000" * (n // 5)),
        "#### spam": ("7", "####" * (n // 4)),
        "#### lines": ("7", "#### \n" * (n // 6)),
        "\\frac chain": ("7", "\\frac{1}{" * (n // 9)),
        "power tower in prose": ("7", "We get " + "x " * (n // 2) + f"\\boxed{{{BOMB}}}."),
    }


# Answers of at most 256 characters (what reaches math-verify), the same at every size.
FIXED = {
    "boxed \\frac chain": ("7", "\\boxed{" + "\\frac{1}{" * 24 + "2" + "}" * 24 + "}"),
    "long reference, power tower": ("9^{" * 60 + "9" + "}" * 60, f"\\boxed{{{BOMB}}}"),
    "long reference, nested parentheses": ("(" * 127 + "1" + ")" * 127, "\\boxed{(1)}"),
}


_TIME_BEFORE = (
    "import sys, time, types\n"
    "module = types.ModuleType('math_answers_before')\n"
    "exec(open(sys.argv[1]).read(), module.__dict__)\n"
    "text = open(sys.argv[2], encoding='utf-8').read()\n"
    "start = time.perf_counter()\n"
    "module.extract(text)\n"
    "print(time.perf_counter() - start)\n"
)


def before_source(commit: str, folder: str) -> str:
    """The path of `rljax/lm/tasks/math_answers.py` as it was at `commit`, written to `folder`."""
    try:
        source = subprocess.run(
            ["git", "show", f"{commit}:rljax/lm/tasks/math_answers.py"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as e:
        raise cli.ConfigError(f"--before={commit!r}: git show failed ({cli.one_line(e)})") from None
    path = os.path.join(folder, "math_answers_before.py")
    with open(path, "w") as f:
        f.write(source)
    return path


def before_seconds(source: str, text: str, folder: str, cap_s: float) -> float | None:
    """Seconds the `before_source` module's `extract(text)` takes (in a child process, so one
    that never ends can be stopped), or None past `cap_s`."""
    path = os.path.join(folder, "text.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    command = [sys.executable, "-c", _TIME_BEFORE, source, path]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=cap_s, check=True)
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout)


def main(argv) -> int:
    p = cli.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chars", default="1000,65536,1048576")
    p.add_argument("--timeout_s", type=float, default=1.0)
    p.add_argument("--before", default="")
    p.add_argument("--before_cap_s", type=float, default=20.0)
    args = p.parse_args(argv)
    sizes = [cli.check_int("--chars", int(c), low=16) for c in args.chars.split(",")]
    if not args.timeout_s > 0 or not args.before_cap_s > 0:
        raise cli.ConfigError("--timeout_s and --before_cap_s must be > 0 seconds")
    folder = tempfile.mkdtemp(prefix="bench_math_hostile_")
    old = before_source(args.before, folder) if args.before else None
    print(f"{machine.describe()}; deadline {args.timeout_s} s per completion")
    head = "| family | chars | extract s | reward s | answer | timeouts |"
    print(head + (f" extract s at {args.before} |" if old else ""))
    print("|---" * (6 + bool(old)) + "|")
    worst, worst_name = 0.0, ""
    with Checker(timeout_s=args.timeout_s, num_workers=1, cache_size=0) as checker:
        for n in sizes:
            cases = {**(FIXED if n == sizes[0] else {}), **families(n)}
            for name, (reference, text) in cases.items():
                start = time.perf_counter()
                math_answers.extract(text)
                extract_s = time.perf_counter() - start
                checker.check([("1", "1")])  # a live, warm worker before the clock starts
                timeouts = checker.stats["timeouts"]
                start = time.perf_counter()
                _, answers = checker.judge([reference], [text])
                reward_s = time.perf_counter() - start
                if reward_s > worst:
                    worst, worst_name = reward_s, f"{name} ({len(text):,} chars)"
                row = (
                    f"| {name} | {len(text):,} | {extract_s:.4f} | {reward_s:.3f} | "
                    f"{'none' if answers[0] is None else 'found'} | "
                    f"{checker.stats['timeouts'] - timeouts} |"
                )
                if old:
                    seconds = before_seconds(old, text, folder, args.before_cap_s)
                    before = f"> {args.before_cap_s:g}" if seconds is None else f"{seconds:.4f}"
                    row += f" {before} |"
                print(row, flush=True)
    print(
        f"worst reward: {worst:.3f} s ({worst_name}) = deadline {args.timeout_s} s "
        f"+ {worst - args.timeout_s:.3f} s"
    )
    return 0


if __name__ == "__main__":
    cli.main(lambda: main(sys.argv[1:]))
