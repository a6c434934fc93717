"""Regenerates the results tables of README.md and docs/ from the committed results files.

    python scripts/make_tables.py          # rewrite the tables in place
    python scripts/make_tables.py --check  # exit 1 and name each table that differs

Every study has a folder ``results/<study>/`` with ``card.json`` (what the study claims, its
command, verdict rule, and per seed set the date, commit, machine and figures) and, where the
run's own file was kept, the ``results.json`` its script wrote; a figure with a ``path`` is read
from that file, a figure with numbers is the card's own copy of what the script wrote (its
``source`` says from where). A card's ``kind`` is ``reproduction`` (the default), ``benchmark``,
``learner`` (runs of shipped configs: one row per run) or ``record`` (measurements of a change,
kept in its ``history`` only). Any card may keep a ``history``: earlier measurements, each with
its date, commit, machine, figures and a note; no table shows it.

The tables live between marker comments, ``<!-- BEGIN <name> -->`` ... ``<!-- END <name> -->``:

- ``results`` in README.md: the headline rows, the cards with a ``headline_row`` (at most
  ``README_ROWS``, ordered by its ``rank``; its ``figures`` and ``seed_sets`` name the headline
  figures and seed sets the row keeps, all where absent);
- ``results`` in docs/results.md: one row per benchmark, learner and study;
- ``summary`` in docs/reproductions.md and docs/benchmarks.md, ``card:<study>`` (one section per
  study) in docs/reproductions.md;
- ``runs:<study>`` in a learner card's page (``doc``): one row per run;
- ``dp_cvar`` in docs/dp.md (from ``results/dp_cvar/results.json``: experiments/dp_cvar.py's rows).

``tests/test_tables.py`` fails when a committed table differs from what this script generates.
"""

import argparse
import os
import re
import sys

from rljax.io.files import read_json  # errors name the file, the line and the column

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "results")
README_ROWS = 10  # the README's headline table holds at most this many rows
KINDS = ("reproduction", "benchmark", "learner", "record")


def load_cards(results_dir: str = RESULTS) -> dict[str, dict]:
    """study -> card, with every figure's value (and interval) resolved; sorted by ``order``.
    Every error names the card.json or results file at fault."""
    cards = {}
    for study in sorted(os.listdir(results_dir)):
        path = os.path.join(results_dir, study, "card.json")
        if not os.path.isfile(path):
            continue
        card = read_json(path)
        if not isinstance(card, dict):
            raise ValueError(f"{path} holds a JSON {type(card).__name__}; allowed: an object")
        if kind(card) not in KINDS:
            raise ValueError(f"{path}: kind={kind(card)!r} is invalid; allowed: {KINDS}")
        for i, seed_set in enumerate(card.get("seed_sets", [])):
            if not isinstance(seed_set, dict) or not isinstance(seed_set.get("figures"), dict):
                raise ValueError(f"{path}: seed_sets[{i}] has no figures object")
            # Each seed set reads its own run's file (``results``; default results.json).
            raw_name = seed_set.get("results", "results.json")
            raw_path = os.path.join(results_dir, study, raw_name)
            raw = read_json(raw_path) if os.path.isfile(raw_path) else None
            for name, fig in seed_set["figures"].items():
                if "path" in fig:
                    if raw is None:
                        raise ValueError(f"{path}: figure {name!r} has a path but no {raw_path}")
                    fig.update(_resolve(raw, fig["path"], f"{path}: figure {name!r}", raw_path))
        cards[study] = card
    return dict(sorted(cards.items(), key=lambda kv: (kv[1].get("order", 99), kv[0])))


def kind(card: dict) -> str:
    return card.get("kind", "reproduction")


def _resolve(raw, path: list, where: str, source: str = "results.json") -> dict:
    """{"value": ..., "ci": [...]} from ``raw`` (the file ``source``) at ``path`` (a list of
    keys)."""
    node = raw
    for key in path:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"{where}: {source} has no {path}") from None
    if isinstance(node, dict):
        if "diff" in node:
            return {"value": node["diff"], "ci": node["diff_ci"]}
        if "mean" in node:
            return {"value": node["mean"], "ci": node.get("mean_ci")}
        if "estimate" in node:  # a checked claim: {"status", "estimate", "ci"}
            return {"value": node["estimate"], "ci": node.get("ci")}
        raise ValueError(f"{where}: {path} is neither a comparison nor a summary")
    return {"value": node}


def fmt(fig: dict, digits: int, signed: bool) -> str:
    """``+0.028 [+0.024, +0.031]``; a plain value without an interval; ``values``: one number
    per seed, listed."""
    sign = "+" if fig.get("signed", signed) else ""
    group = "," if fig.get("thousands") else ""  # 499,712
    form = f"{{:{sign}{group}.{fig.get('digits', digits)}{'e' if fig.get('sci') else 'f'}}}"
    if "values" in fig:  # one number per seed
        text = ", ".join(form.format(v) for v in fig["values"]) + fig.get("unit", "")
        return text.replace("-", "−")
    value = fig["value"]
    if isinstance(value, str):
        return value
    text = form.format(value) + fig.get("unit", "")
    if fig.get("ci"):
        low, high = fig["ci"]
        text += f" [{form.format(low)}, {form.format(high)}]"
    return text.replace("-", "−")


def _figure_text(card: dict, seed_set: dict, name: str) -> str:
    return fmt(seed_set["figures"][name], card.get("digits", 3), card.get("signed", True))


def _label(seed_set: dict) -> str:
    return seed_set.get("label", f"seeds {seed_set['seeds']}")


def _when(seed_set: dict, machine: str = "full") -> str:
    """Date, commit and machine: ``full`` (with its load) or ``short`` (the CPU only)."""
    where = seed_set["machine"].split(",")[0] if machine == "short" else seed_set["machine"]
    return f"{seed_set['date']}, `{seed_set['commit']}`, {where}"


def results_table(cards: dict, page_dir: str = "", machine: str = "full") -> str:
    """One row per card: headline figures per seed set, verdict, provenance.

    Links are written relative to ``page_dir`` (the folder of the page the table goes into);
    ``machine`` is ``_when``'s. A reproduction's seed sets sit side by side in one line; a
    benchmark's or learner's sets (different settings, not repeats) one line each."""
    lines = [
        "| what | headline figure (95% CI over seeds) | verdict | measured |",
        "|---|---|---|---|",
    ]
    for card in cards.values():
        figs, whens = [], []
        sets = card["seed_sets"]
        for s in sets:
            when = _when(s, machine)
            if when not in whens:
                whens.append(when)
        if kind(card) == "reproduction" and len(sets) > 1:
            # a reproduction's seed sets side by side: "seeds A / B: label x [ci] / y [ci]"
            figs.append(" / ".join(_label(s) for s in sets) + ": " + "; ".join(
                f"{label} " + " / ".join(_figure_text(card, s, name) for s in sets)
                for label, name in _headline(card)
                if all(name in s["figures"] for s in sets)
            ))  # fmt: skip
        for s in sets if not figs else ():
            parts = [f"{label} {_figure_text(card, s, name)}" for label, name in _headline(card)
                     if name in s["figures"]]  # fmt: skip
            prefix = f"{_label(s)}: " if len(sets) > 1 else ""
            figs.append(prefix + "; ".join(parts))
        link = f"[{card['short']}]({_relative(card['doc'], page_dir)})"
        verdict = card["verdict"]
        lines.append(f"| {link} | {'<br>'.join(figs)} | {verdict} | {'<br>'.join(whens)} |")
    return "\n".join(lines)


def headline_cards(cards: dict) -> dict:
    """The README's rows: cards with a ``headline_row``, by its rank, each cut to the headline
    figures and seed sets the row names."""
    chosen = sorted(
        (c for c in cards.values() if "headline_row" in c), key=lambda c: c["headline_row"]["rank"]
    )
    if len(chosen) > README_ROWS:
        names = [c["study"] for c in chosen]
        raise ValueError(
            f"{len(chosen)} cards have a headline_row ({names}); allowed: at most {README_ROWS}"
        )
    out = {}
    for card in chosen:
        row = card["headline_row"]
        have = {
            "figures": [h["label"] for h in card["headline"]],
            "seed_sets": [_label(s) for s in card["seed_sets"]],
        }
        for name, labels in have.items():
            unknown = sorted(set(row.get(name, ())) - set(labels))
            if unknown:
                raise ValueError(
                    f"{card['study']}: headline_row.{name} names {unknown}; allowed: {labels}"
                )
        keep = {name: row.get(name, labels) for name, labels in have.items()}
        out[card["study"]] = dict(
            card,
            headline=[h for h in card["headline"] if h["label"] in keep["figures"]],
            seed_sets=[s for s in card["seed_sets"] if _label(s) in keep["seed_sets"]],
        )
    return out


def _relative(target: str, page_dir: str) -> str:
    """A repository-relative link (``docs/lm.md#results``) as seen from a page in ``page_dir``."""
    path, _, anchor = target.partition("#")
    rel = os.path.relpath(path, page_dir or ".") if path else ""
    return rel + (f"#{anchor}" if anchor else "")


def _headline(card: dict) -> list[tuple[str, str]]:
    return [(h["label"], h["figure"]) for h in card["headline"]]


def summary_table(cards: dict, of_kind: str) -> str:
    """docs/<page>.md's summary: one row per study of ``of_kind`` with its command and verdict."""
    lines = ["| study | command | claim | verdict | seed sets |", "|---|---|---|---|---|"]
    for card in cards.values():
        if kind(card) != of_kind:
            continue
        seeds = "; ".join(f"{s['seeds']} ({s['verdict']})" for s in card["seed_sets"])
        lines.append(
            f"| [{card['short']}](#{card['anchor']}) | `{card['command']}` | {card['claim']} | "
            f"**{card['verdict']}** | {seeds} |"
        )
    return "\n".join(lines)


def card_section(card: dict) -> str:
    """One study in the common format: claim, setup, command, table, rule, verdict, provenance."""
    sets = card["seed_sets"]
    lines = [
        f"**Claim.** {card['claim']}",
        "",
        f"**Setup.** {card['setup']}",
        "",
        f"**Command.** `{card['command']}`",
        "",
        "| figure | " + " | ".join(_label(s) for s in sets) + " |",
        "|---|" + "---|" * len(sets),
    ]
    names = list(dict.fromkeys(n for s in sets for n in s["figures"]))
    for name in names:
        cells = [_figure_text(card, s, name) if name in s["figures"] else "–" for s in sets]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"**Verdict rule.** {card['verdict_rule']}",
        "",
        f"**Verdict: {card['verdict']}.** "
        + "; ".join(f"{_label(s)}: {s['verdict']}" for s in sets)
        + ".",
        "",
        "**Measured.** "
        + "; ".join(
            f"{_label(s)}: {_when(s)}" + (f", {s['wall']}" if s.get("wall") else "") for s in sets
        )
        + f". Source: {card['source']}.",
    ]
    return "\n".join(lines)


def runs_table(card: dict) -> str:
    """A learner card's runs: one row per run (seed set) with its figures, verdict, provenance."""
    sets = card["seed_sets"]
    names = list(dict.fromkeys(n for s in sets for n in s["figures"]))
    lines = [
        "| run | " + " | ".join(names) + " | verdict | measured |",
        "|---|" + "---|" * (len(names) + 2),
    ]
    for s in sets:
        cells = [_figure_text(card, s, n) if n in s["figures"] else "–" for n in names]
        when = _when(s) + (f", {s['wall']}" if s.get("wall") else "")
        lines.append(f"| {_label(s)} | " + " | ".join(cells) + f" | {s['verdict']} | {when} |")
    return "\n".join(lines)


def dp_cvar_table(rows: list[dict]) -> str:
    """docs/dp.md's CVaR table from experiments/dp_cvar.py's results.json (a list of rows)."""
    lines = [
        "| env | α | method | CVaR_α (exact) | CVaR_α (MC) | mean (exact) |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['env']} | {r['alpha']:g} | {r['method']} | {r['cvar']:.3f} | "
            f"{r['cvar_mc']:.3f} | {r['mean']:.3f} |"
        )
    return "\n".join(lines)


def tables(cards: dict, results_dir: str = RESULTS) -> dict[str, dict[str, str]]:
    """file (relative to the repository) -> marker name -> generated text."""
    dp_rows = read_json(os.path.join(results_dir, "dp_cvar", "results.json"))
    shown = {k: c for k, c in cards.items() if kind(c) != "record"}
    out = {
        "docs/dp.md": {"dp_cvar": dp_cvar_table(dp_rows)},
        "README.md": {"results": results_table(headline_cards(cards), machine="short")},
        "docs/results.md": {"results": results_table(shown, "docs")},
        "docs/reproductions.md": {"summary": summary_table(cards, "reproduction")},
        "docs/benchmarks.md": {
            "summary": results_table(
                {k: c for k, c in cards.items() if kind(c) == "benchmark"}, "docs"
            )
        },
    }
    for study, card in cards.items():
        if kind(card) == "reproduction":
            out["docs/reproductions.md"][f"card:{study}"] = card_section(card)
        elif kind(card) == "learner":
            page = card["doc"].partition("#")[0]
            out.setdefault(page, {})[f"runs:{study}"] = runs_table(card)
    return out


def _block(name: str) -> re.Pattern:
    return re.compile(
        rf"(<!-- BEGIN {re.escape(name)} -->\n)(.*?)(<!-- END {re.escape(name)} -->)", re.S
    )


def apply(text: str, blocks: dict[str, str], where: str) -> str:
    """``text`` with each marked block replaced by its generated content."""
    for name, body in blocks.items():
        pattern = _block(name)
        if not pattern.search(text):
            raise ValueError(f"{where}: no <!-- BEGIN {name} --> ... <!-- END {name} --> block")
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(3), text)
    return text


def block_text(text: str, name: str) -> str:
    """What a page holds between its ``name`` markers (``ValueError`` if it has none)."""
    match = _block(name).search(text)
    if not match:
        raise ValueError(f"no <!-- BEGIN {name} --> ... <!-- END {name} --> block")
    return match.group(2)


def differences(root: str = ROOT, results_dir: str = RESULTS) -> list[str]:
    """The files whose committed tables differ from what the results files generate."""
    stale = []
    for rel, blocks in tables(load_cards(results_dir), results_dir).items():
        with open(os.path.join(root, rel)) as f:
            text = f.read()
        if apply(text, blocks, rel) != text:
            stale.append(rel)
    return stale


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a table is stale")
    args = parser.parse_args(argv)
    try:
        return _write_or_check(args)
    except (OSError, ValueError) as e:  # a card or results file that does not read: one line
        print(f"error: {e}", file=sys.stderr)
        return 2


def _write_or_check(args) -> int:
    if args.check:
        stale = differences()
        for rel in stale:
            print(f"error: {rel}: a table differs from results/; run python scripts/make_tables.py")
        return 1 if stale else 0
    for rel, blocks in tables(load_cards()).items():
        path = os.path.join(ROOT, rel)
        with open(path) as f:
            text = f.read()
        new = apply(text, blocks, rel)
        if new != text:
            with open(path, "w") as f:
                f.write(new)
            print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
