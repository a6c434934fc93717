"""scripts/make_tables.py: the results tables in README.md and docs/ equal what the committed
results files (results/<study>/) generate, a changed number makes the check fail, and the
README stays a front door (at most 10 headline rows, at most 1,200 words)."""

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
    studies = {c["study"] for c in cards.values() if mt.kind(c) == "reproduction"}
    blocks = mt.tables(cards)["docs/reproductions.md"]
    assert {f"card:{s}" for s in studies} <= set(blocks)
    for card in cards.values():
        for seed_set in card["seed_sets"]:
            assert {"date", "commit", "machine"} <= set(seed_set), card["study"]
            for fig in seed_set["figures"].values():
                if "values" in fig:  # one number per seed
                    assert all(isinstance(v, (int, float)) for v in fig["values"]), card["study"]
                    continue
                assert isinstance(fig["value"], (int, float)), card["study"]
                if fig.get("ci"):
                    low, high = fig["ci"]
                    assert low <= fig["value"] <= high, (card["study"], fig)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def test_every_history_entry_says_when_where_and_what():
    """An earlier measurement kept in a card's history: date, commit, machine, a note, and
    figures that are numbers, lists of numbers or {"value", "ci"}."""
    cards = _make_tables().load_cards()
    entries = 0
    for study, card in cards.items():
        for entry in card.get("history", []):
            assert set(entry) == {"date", "commit", "machine", "figures", "note"}, study
            for key in ("date", "commit", "machine", "note"):
                assert isinstance(entry[key], str) and entry[key], (study, key)
            assert entry["figures"], (study, entry["note"])
            for name, fig in entry["figures"].items():
                if isinstance(fig, dict):
                    assert _is_number(fig["value"]), (study, name)
                    low, high = fig.get("ci", (fig["value"], fig["value"]))
                    assert low <= fig["value"] <= high, (study, name)
                elif isinstance(fig, list):
                    assert fig and all(_is_number(v) for v in fig), (study, name)
                else:
                    assert _is_number(fig), (study, name)
            entries += 1
    assert entries >= 1


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
    verdicts.overall of each claim's verdicts.across over the sets (a claim holds only if it
    holds on every set)."""
    from rljax.train import verdicts

    checked = 0
    for study, card in _make_tables().load_cards().items():
        if card.get("kind") == "benchmark" or len(card["seed_sets"]) < 2:
            continue
        raws = [_kept_results(study, s) for s in card["seed_sets"]]
        if any(r is None or not isinstance(r.get("claims"), dict) for r in raws):
            continue
        try:
            per_claim = {
                k: [verdicts.status(r["claims"][k]) for r in raws] for k in raws[0]["claims"]
            }
        except (KeyError, ValueError):
            continue  # claims that are not status words (older scripts): checked by hand
        combined = verdicts.overall({k: verdicts.across(v) for k, v in per_claim.items()})
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
    stale = mt.differences(results_dir=str(copy))
    assert {"docs/results.md", "docs/reproductions.md"} <= set(stale)
    assert "README.md" not in stale  # not a headline row


def test_a_headline_card_s_changed_number_reaches_the_readme(tmp_path):
    mt = _make_tables()
    copy = tmp_path / "results"
    shutil.copytree(os.path.join(ROOT, "results"), copy)
    study = next(s for s, c in mt.load_cards(str(copy)).items() if "headline_row" in c)
    path = copy / study / "card.json"
    card = json.loads(path.read_text())
    fig = next(f for ss in card["seed_sets"] for f in ss["figures"].values() if "value" in f)
    fig["value"] += 1.0
    path.write_text(json.dumps(card))
    assert {"README.md", "docs/results.md"} <= set(mt.differences(results_dir=str(copy)))


def test_a_learner_card_s_runs_table_follows_the_card(tmp_path):
    mt = _make_tables()
    copy = tmp_path / "results"
    shutil.copytree(os.path.join(ROOT, "results"), copy)
    study, card = next(
        (s, c) for s, c in mt.load_cards(str(copy)).items() if mt.kind(c) == "learner"
    )
    raw = json.loads((copy / study / "card.json").read_text())
    next(iter(raw["seed_sets"][0]["figures"].values()))["value"] += 1.0
    (copy / study / "card.json").write_text(json.dumps(raw))
    assert card["doc"].partition("#")[0] in mt.differences(results_dir=str(copy))


def _readme() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def test_the_readme_holds_at_most_ten_headline_rows():
    mt = _make_tables()
    rows = [r for r in mt.block_text(_readme(), "results").splitlines() if r.startswith("| [")]
    assert 1 <= len(rows) <= mt.README_ROWS == 10, len(rows)
    assert len(mt.headline_cards(mt.load_cards())) == len(rows)


def test_an_eleventh_headline_row_is_refused():
    mt = _make_tables()
    cards = mt.load_cards()
    for rank, card in enumerate(cards.values()):
        card["headline_row"] = {"rank": rank}
    with pytest.raises(ValueError, match="allowed: at most 10"):
        mt.headline_cards(cards)


def test_the_readme_is_at_most_1200_words():
    """Words as `wc -w` counts them in the markdown source (runs of non-whitespace)."""
    words = len(_readme().split())
    assert words <= 1200, f"README.md has {words} words; allowed: at most 1,200"


def test_the_full_table_has_a_row_per_card_with_seed_sets():
    mt = _make_tables()
    cards = mt.load_cards()
    with open(os.path.join(ROOT, "docs", "results.md")) as f:
        rows = [r for r in mt.block_text(f.read(), "results").splitlines() if r.startswith("| [")]
    assert len(rows) == sum(mt.kind(c) != "record" for c in cards.values())


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
    pages = {"README.md", "docs/results.md", "docs/benchmarks.md", "docs/reproductions.md"}
    pages |= set(_make_tables().tables(_make_tables().load_cards()))
    for page in sorted(pages):
        with open(os.path.join(ROOT, page)) as f:
            text = f.read()
        for block in text.split("<!-- BEGIN ")[1:]:
            rows = [r for r in block.split("<!-- END ")[0].splitlines() if r.startswith("|")]
            if rows:
                cells = {r.count("|") for r in rows}
                assert len(cells) == 1, (page, block.splitlines()[0], sorted(cells))
