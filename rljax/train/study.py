"""The one skeleton of every reproduction in ``experiments/``: flags, run, results files, summary.

A study is its spec (flags, defaults, arms), its claims, the rule that turns its numbers into
claim statuses, and its plot. Everything else is here, written once::

    STUDY = study.Study(
        script=__file__, doc=__doc__, workdir="runs/kl_bayes", run=run, report=report,
        plot=plot, seeds=10, quick={"seeds": 3, "steps": 200}, flags=add_flags, check=check,
    )

    if __name__ == "__main__":
        STUDY.entry()  # one-line errors and exit codes (rljax.cli.main)

Every study runs the same way: ``PYTHONPATH=. nice -n 10 python experiments/<name>.py`` for the
default (into its ``workdir``), ``--quick`` for the short run its test makes, ``--seed=1000`` for
a second seed set, ``--workdir DIR`` elsewhere; ``STUDY.main(argv)`` returns the numbers ``run``
returned (the tests call it).

``Study.main`` does, in order: quiet third-party logs; parse the shared flags (``--workdir``,
``--quick``, ``--seeds``, ``--seed``, ``--steps``, ``--resume``, as the study asks for them) and
the study's own; fill the flags left at 0 from ``defaults`` (or ``quick``'s) and set the rest of
``quick`` under ``--quick``; check them (``low`` bounds, then the study's ``check``), all before
anything is built, with one-line errors; switch on the compiled Threefry kernel
(``rljax.prng_kernel.install``: the study module called ``rljax.xla_flags.set_flags`` before
importing jax, the kernel goes on once here); lock the workdir (one study per workdir); run the
study; turn its numbers into a ``Report`` (the verdict from its claims by the one rule,
``rljax.train.verdicts.overall``) or ``Files``; write results.json and results.md
(``rljax.stats.write_results``); draw its plots; print results.md.

Also here: ``config`` (a shipped ``configs/<name>.py`` of the study's checkout), ``figure`` (a
plot saved and closed) and the text the reports share: ``diff_text``, ``table``,
``md_table``, ``record_lines``, ``claim_lines``, ``checked_claims``, ``tally``.

Beside it, what several studies share: ``verdicts`` (the one rule), ``arm_store`` (``--resume``),
``study_population`` (populations of classic learners), ``study_lm`` (the RLVR testbed),
``study_scratch`` (language models trained from scratch), ``study_stats`` (rank correlations and
the cells × seeds bootstrap) and ``study_checks`` (exact identities between rljax's losses).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rljax import cli, machine, prng_kernel, stats
from rljax.io import workdir_lock
from rljax.train import verdicts


@dataclasses.dataclass
class Report:
    """What a study concluded, in the layout of ``rljax.stats.write_results``.

    ``claims`` is anything ``verdicts.overall`` reads (``{name: status}``, ``{name: (status,
    why)}``, a list of statuses, dicts with a ``"status"``); the verdict is computed from it
    (``verdicts.UNDECIDED`` when no claim could be checked).
    """

    title: str
    claim: str
    claims: Any
    reason: str
    arms: dict
    metric: str
    extra: dict = dataclasses.field(default_factory=dict)
    notes: Sequence[str] = ()
    digits: int = 3

    @property
    def verdict(self) -> str:
        return verdicts.overall(self.claims) if self.claims else verdicts.UNDECIDED


@dataclasses.dataclass
class Files:
    """A study whose files keep a layout of their own: ``json`` (any JSON-ready value) as
    results.json and ``markdown`` (None: no results.md) as results.md and the summary."""

    json: Any
    markdown: str | None = None


def _none(*_):
    return None


@dataclasses.dataclass(frozen=True)
class Study:
    """One reproduction: its spec and the functions that are its science.

    Attributes:
      script: the study's file (``__file__``); results.json records ``python experiments/<name>``.
      doc: its docstring (``--help`` shows the first line).
      workdir: the default ``--workdir``.
      run: ``args -> out``, the study's numbers (anything; ``main`` returns it).
      report: ``(args, out, record) -> Report | Files``; ``record`` is
        ``rljax.machine.run_record`` of the run (seconds, load, machine, date, command).
      plot: ``(args, out, report) -> None``, the study's figures into ``args.workdir``.
      options: the study's own plain flags, ``{name: default}``, ``{name: (default, help)}`` or
        ``{name: (default, help, type)}``: ``--name`` of the default's type (int, float or str)
        unless a type is given (a None default, "not set", needs one).
      flags: ``parser -> None``, adds the study's other flags (choices, lists, None defaults).
      check: ``args -> None``, the study's own checks after filling (raise ``cli.ConfigError``).
      seeds: the default of ``--seeds`` (None: no such flag; 0: taken from ``defaults``).
      steps: the default of ``--steps``, likewise.
      seed: add ``--seed`` (the first seed of the set; checked >= 0).
      resume: add ``--resume`` (reuse the arms a killed run finished: ``rljax.train.arm_store``).
      quick: what ``--quick`` sets (None: no ``--quick``): a flag in ``defaults`` takes the value
        if it was left at 0, any other name is set.
      defaults: the values of the flags left at 0 without ``--quick``.
      low: lower bounds of integer flags by name (``{"seeds": 3, "eval-tasks": 1}``), checked
        after filling, in this order.
      workdir_flags: the names of the workdir flag (dest ``workdir``).
    """

    script: str
    doc: str
    workdir: str
    run: Callable[[argparse.Namespace], Any]
    report: Callable[[argparse.Namespace, Any, dict], Report | Files]
    plot: Callable[[argparse.Namespace, Any, Report], None] = _none
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    flags: Callable[[cli.ArgumentParser], None] = _none
    check: Callable[[argparse.Namespace], None] = _none
    seeds: int | None = None
    steps: int | None = None
    seed: bool = True
    resume: bool = False
    quick: Mapping[str, Any] | None = dataclasses.field(default_factory=dict)
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    low: Mapping[str, int] = dataclasses.field(default_factory=dict)
    workdir_flags: tuple[str, ...] = ("--workdir",)

    @property
    def name(self) -> str:
        return os.path.basename(self.script).removesuffix(".py")

    def parser(self) -> cli.ArgumentParser:
        """The shared flags, then the study's own."""
        p = cli.ArgumentParser(description=self.doc.split("\n")[0])
        p.add_argument(*self.workdir_flags, dest="workdir", default=self.workdir)
        if self.quick is not None:
            shown = ", ".join(f"{k}={v}" for k, v in self.quick.items())
            p.add_argument("--quick", action="store_true", help=f"smoke test ({shown})")
        for name, default, what in (
            ("seeds", self.seeds, "seeds (learners per arm)"),
            ("steps", self.steps, "training budget per learner"),
        ):
            if default is not None:
                shown = f" (0: {self.defaults[name]})" if name in self.defaults else ""
                p.add_argument(f"--{name}", type=int, default=default, help=what + shown)
        if self.seed:
            p.add_argument("--seed", type=int, default=0, help="first seed of the set")
        if self.resume:
            p.add_argument("--resume", action="store_true", help="reuse the arms a run finished")
        for name, spec in self.options.items():
            default, what, *kind = spec if isinstance(spec, tuple) else (spec, None)
            kind = kind[0] if kind else type(default)
            if kind not in (int, float, str):
                raise TypeError(f"option {name}={default!r}: the type must be int, float or str")
            p.add_argument(f"--{name}", type=kind, default=default, help=what)
        self.flags(p)
        return p

    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """Parses, fills and checks the flags; a bad one exits 2 with one line naming it."""
        p = self.parser()
        args = p.parse_args(argv)
        quick = self.quick if getattr(args, "quick", False) else {}
        for k, v in {**self.defaults, **quick}.items():
            if k not in self.defaults or getattr(args, k) == 0:
                setattr(args, k, v)
        try:
            for flag, low in self.low.items():
                cli.check_int(f"--{flag}", getattr(args, flag.replace("-", "_")), low=low)
            if self.seed:
                cli.check_int("--seed", args.seed, low=0)
            self.check(args)
            cli.check_workdir(self.workdir_flags[0], args.workdir)
        except cli.ConfigError as e:
            p.error(str(e))
        return args

    def main(self, argv: Sequence[str] | None = None) -> Any:
        """Parses, runs, writes results.json / results.md and the plots, prints the summary."""
        cli.quiet_logs()
        args = self.parse(argv)
        prng_kernel.install()  # CPU random draws through the compiled Threefry kernel
        with workdir_lock.holding(args.workdir):  # one study per workdir, given back on any exit
            os.makedirs(args.workdir, exist_ok=True)
            start = time.perf_counter()
            out = self.run(args)
            record = machine.run_record(f"experiments/{self.name}.py", argv, start)
            report = self.report(args, out, record)
            text = write(args.workdir, report)
            self.plot(args, out, report)
        if text is not None:
            print(text)
        return out

    def entry(self) -> None:
        """``if __name__ == "__main__"``: ``main`` with one-line errors and exit codes."""

        def body() -> int:
            self.main()
            return 0

        cli.main(body)


def write(workdir: str, report: Report | Files) -> str | None:
    """Writes results.json and results.md of a report; returns the markdown."""
    if isinstance(report, Files):
        with open(os.path.join(workdir, "results.json"), "w") as f:
            json.dump(report.json, f, indent=1, default=str)
        if report.markdown is not None:
            with open(os.path.join(workdir, "results.md"), "w") as f:
                f.write(report.markdown)
        return report.markdown
    return stats.write_results(
        workdir, title=report.title, claim=report.claim, verdict=report.verdict,
        reason=report.reason, arms=report.arms, metric=report.metric, extra=report.extra,
        notes=report.notes, digits=report.digits,
    )  # fmt: skip


@contextlib.contextmanager
def figure(path: str, *, nrows: int = 1, ncols: int = 1, dpi: int = 120, tight: bool = True,
           **subplots):  # fmt: skip
    """``with study.figure(path, figsize=(6, 4)) as (fig, ax):`` a matplotlib figure (Agg backend)
    that is laid out (``tight``), saved to ``path`` and closed on leaving the block."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(nrows, ncols, **subplots)
    try:
        yield fig, ax
        if tight:
            fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)


def config(script: str, name: str, arg: str | None = None):
    """``get_config(arg)`` of ``configs/<name>.py`` of the checkout the study ``script`` is in
    (``experiments/`` and ``configs/`` are siblings)."""
    path = os.path.join(os.path.dirname(os.path.abspath(script)), "..", "configs", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"configs_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


# ---- the reports' shared text ---------------------------------------------------------------


def diff_text(value: float, ci: Sequence[float], digits: int = 2) -> str:
    """``"+0.12 [+0.01, +0.30]"``: a signed estimate with its interval."""
    return f"{value:+.{digits}f} [{ci[0]:+.{digits}f}, {ci[1]:+.{digits}f}]"


def record_lines(settings: dict, record: dict) -> list[str]:
    """results.md's last lines: the settings (JSON) and the run record (``Study.report``'s)."""
    return [
        f"Settings: {json.dumps(settings)}.",
        f"Wall time: {record['seconds']:.0f} s ({record['load']}); {record['machine']}; "
        f"command: `{record['command']}`.",
    ]


def table(rows: Mapping[str, Mapping[str, dict]], columns: Sequence, *, first: str = "arm",
          digits: int = 3) -> list[str]:  # fmt: skip
    """Markdown table lines, one row per ``rows`` entry, each cell ``mean [95% CI]`` of a
    ``rljax.stats.summarize`` dict.

    Args:
      rows: ``{row name: {key: summary}}``.
      columns: keys, or ``(header, key, digits)`` triples.
      first: the first column's header.
      digits: decimals of the columns given as keys.
    """
    cols = [c if isinstance(c, tuple) else (c, c, digits) for c in columns]
    lines = [f"| {first} | " + " | ".join(h for h, _, _ in cols) + " |"]
    lines.append("|---" * (len(cols) + 1) + "|")
    for name, row in rows.items():
        cells = [stats.format_interval(row[k], digits=d) for _, k, d in cols]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def md_table(header: Sequence[str], rows) -> list[str]:
    """Markdown table lines from a header and rows of cells (each shown with ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def claim_lines(claims: Mapping[str, tuple[str, str]]) -> list[str]:
    """One markdown bullet per claim of ``{claim: (status, why)}``."""
    return [f"- *{claim}*: **{status}** — {why}." for claim, (status, why) in claims.items()]


def checked_claims(claims: Mapping[str, tuple], digits: int) -> list[str]:
    """results.md's "Claims checked" block of ``{claim: (status, estimate, [lo, hi])}``."""
    return [
        "**Claims checked** (status, estimate, 95% interval):",
        "",
        *(f"* {k}: **{s}**, {diff_text(e, ci, digits)}" for k, (s, e, ci) in claims.items()),
    ]


def tally(claims: Mapping[str, tuple], what: str = "") -> str:
    """The reason line of ``{claim: ("holds" | "fails" | "tie", ...)}``: how many hold and fail,
    and which (``what``: a note on the rules, in brackets after the count)."""
    held = [k for k, (s, *_) in claims.items() if s == "holds"]
    failed = [k for k, (s, *_) in claims.items() if s == "fails"]
    return (
        f"{len(held)} of {len(claims)} checked claims hold, {len(failed)} fail, the rest are "
        f"ties{what}"
        + (f"; holds: {'; '.join(held)}" if held else "")
        + (f"; fails: {'; '.join(failed)}" if failed else "")
        + "."
    )
