"""scripts/make_tables.py: the results tables in README.md and docs/ equal what the committed
results files (results/<study>/) generate, and a changed number makes the check fail."""

import importlib.util
import json
import os
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _make_tables():
    spec = importlib.util.spec_from_file_location(
        "make_tables", os.path.join(ROOT, "scripts", "make_tables.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_tables_equal_the_results_files():
    stale = _make_tables().differences()
    assert stale == [], f"run python scripts/make_tables.py; stale: {stale}"


def test_every_study_has_a_card_and_each_card_a_table():
    mt = _make_tables()
    cards = mt.load_cards()
    studies = {c["study"] for c in cards.values() if c.get("kind", "reproduction") != "benchmark"}
    blocks = mt.tables(cards)["docs/reproductions.md"]
    assert {f"card:{s}" for s in studies} <= set(blocks)
    for card in cards.values():
        for seed_set in card["seed_sets"]:
            assert {"date", "commit", "machine"} <= set(seed_set), card["study"]
            for fig in seed_set["figures"].values():
                assert isinstance(fig["value"], (int, float)), card["study"]
                if fig.get("ci"):
                    low, high = fig["ci"]
                    assert low <= fig["value"] <= high, (card["study"], fig)


def _kept_results(study: str, seed_set: dict):
    """The results file a seed set was run into, if it is kept; else None."""
    path = os.path.join(ROOT, "results", study, seed_set.get("results", "results.json"))
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


def test_a_kept_results_json_gives_its_seed_set_its_verdict():
    mt = _make_tables()
    kept = 0
    for study, card in mt.load_cards().items():
        if card.get("kind") == "benchmark":  # one row per set; results.json has the overall verdict
            raw = _kept_results(study, {})
            assert raw is None or card["verdict"] == raw["verdict"], study
            continue
        for seed_set in card["seed_sets"]:
            raw = _kept_results(study, seed_set)
            if raw is not None:
                assert seed_set["verdict"] == raw["verdict"], (study, seed_set["seeds"])
                kept += 1
        if len(card["seed_sets"]) == 1:
            assert card["verdict"] == card["seed_sets"][0]["verdict"], study
    assert kept >= 1


def test_two_kept_seed_sets_give_the_card_their_combined_verdict():
    """Where every seed set's results file lists its claims, the card's verdict is
    _verdicts.overall of each claim's _verdicts.across over the sets (a claim holds only if it
    holds on every set)."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "experiments"))
    import _verdicts

    checked = 0
    for study, card in _make_tables().load_cards().items():
        if card.get("kind") == "benchmark" or len(card["seed_sets"]) < 2:
            continue
        raws = [_kept_results(study, s) for s in card["seed_sets"]]
        if any(r is None or not isinstance(r.get("claims"), dict) for r in raws):
            continue
        try:
            per_claim = {
                k: [_verdicts.status(r["claims"][k]) for r in raws] for k in raws[0]["claims"]
            }
        except (KeyError, ValueError):
            continue  # claims that are not status words (older scripts): checked by hand
        combined = _verdicts.overall({k: _verdicts.across(v) for k, v in per_claim.items()})
        assert card["verdict"] == combined, (study, per_claim)
        checked += 1
    assert checked >= 1


def test_a_changed_number_makes_the_check_fail(tmp_path):
    mt = _make_tables()
    copy = tmp_path / "results"
    shutil.copytree(os.path.join(ROOT, "results"), copy)
    path = copy / "reward_validity" / "card.json"
    card = json.loads(path.read_text())
    figure = card["seed_sets"][0]["figures"]["verifier gain vs 0 (pass@1)"]
    figure["value"] += 0.001
    path.write_text(json.dumps(card))
    assert "README.md" in mt.differences(results_dir=str(copy))
    assert "docs/reproductions.md" in mt.differences(results_dir=str(copy))


def test_a_figure_read_from_results_json_follows_the_file(tmp_path):
    mt = _make_tables()
    copy = tmp_path / "results"
    shutil.copytree(os.path.join(ROOT, "results"), copy)
    study = next(
        s
        for s in sorted(os.listdir(copy))
        if (copy / s / "card.json").is_file()
        and any(
            "path" in f
            for ss in json.loads((copy / s / "card.json").read_text())["seed_sets"]
            for f in ss["figures"].values()
        )
    )
    card = json.loads((copy / study / "card.json").read_text())
    fig = next(f for ss in card["seed_sets"] for f in ss["figures"].values() if "path" in f)
    raw = json.loads((copy / study / "results.json").read_text())
    node = raw
    for key in fig["path"][:-1]:
        node = node[key]
    leaf = node[fig["path"][-1]]
    if isinstance(leaf, dict):
        leaf[next(k for k in ("diff", "mean", "estimate") if k in leaf)] += 1.0
    else:
        node[fig["path"][-1]] = leaf + 1.0
    (copy / study / "results.json").write_text(json.dumps(raw))
    assert mt.differences(results_dir=str(copy)) != []


def test_the_dp_table_follows_its_results_file(tmp_path):
    mt = _make_tables()
    copy = tmp_path / "results"
    shutil.copytree(os.path.join(ROOT, "results"), copy)
    rows = json.loads((copy / "dp_cvar" / "results.json").read_text())
    rows[1]["cvar"] += 0.01  # the gamble chain's stock-augmented CVaR at α = 0.05
    (copy / "dp_cvar" / "results.json").write_text(json.dumps(rows))
    assert mt.differences(results_dir=str(copy)) == ["docs/dp.md"]


def test_a_path_missing_from_results_json_is_named(tmp_path):
    mt = _make_tables()
    with pytest.raises(ValueError, match="results.json has no"):
        mt._resolve({"comparisons": {}}, ["comparisons", "x"], "study: x")


def test_every_generated_row_has_the_header_s_cells():
    """A '|' inside a card's text (e.g. a machine string) would add cells and break the table."""
    for page in ("README.md", "docs/benchmarks.md", "docs/reproductions.md"):
        with open(os.path.join(ROOT, page)) as f:
            text = f.read()
        for block in text.split("<!-- BEGIN ")[1:]:
            rows = [r for r in block.split("<!-- END ")[0].splitlines() if r.startswith("|")]
            if rows:
                cells = {r.count("|") for r in rows}
                assert len(cells) == 1, (page, block.splitlines()[0], sorted(cells))
