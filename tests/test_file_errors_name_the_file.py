"""Every file-reading path outside the Hugging Face loaders (tests/lm/test_hf_bad_files.py) names
the file it could not read: the results cards and results files of scripts/make_tables.py, the
studies' results.json and metrics.jsonl (`rljax.train.study_lm`), finished arms
(`rljax.train.arm_store`) and the run files read through `rljax.io.files`. Each row of `READERS`
damages one file and calls the reader; a new reader is one more row.
"""

import importlib.util
import json
import os

import numpy as np
import pytest

from rljax.io import files
from rljax.train import arm_store, study_lm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _make_tables():
    spec = importlib.util.spec_from_file_location(
        "make_tables_errors", os.path.join(ROOT, "scripts", "make_tables.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _card(tmp_path, card_text: str, results_text: str | None = None) -> tuple[str, str]:
    study = tmp_path / "results" / "study_x"
    study.mkdir(parents=True)
    (study / "card.json").write_text(card_text)
    if results_text is not None:
        (study / "results.json").write_text(results_text)
    return str(tmp_path / "results"), str(study)


GOOD_CARD = json.dumps(
    {"study": "study_x", "seed_sets": [{"figures": {"gap": {"path": ["arms", "gap"]}}}]}
)


def card_not_json(tmp_path):
    _make_tables().load_cards(_card(tmp_path, '{"study": "study_x",')[0])


def card_without_figures(tmp_path):
    card = json.dumps({"seed_sets": [{"date": "2026-12-04"}]})
    _make_tables().load_cards(_card(tmp_path, card)[0])


def card_bad_kind(tmp_path):
    _make_tables().load_cards(_card(tmp_path, json.dumps({"kind": "essay"}))[0])


def results_not_json(tmp_path):
    _make_tables().load_cards(_card(tmp_path, GOOD_CARD, '{"arms": {"gap": 0.5')[0])


def results_without_the_figure(tmp_path):
    _make_tables().load_cards(_card(tmp_path, GOOD_CARD, json.dumps({"arms": {}}))[0])


def results_missing(tmp_path):
    _make_tables().load_cards(_card(tmp_path, GOOD_CARD)[0])


def study_metrics_bad_line(tmp_path):
    lines = [json.dumps({"update": 0}), "not json", json.dumps({"update": 1})]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    study_lm.read_metrics(str(tmp_path), 1, 1)


def study_metrics_not_utf8(tmp_path):
    (tmp_path / "metrics.jsonl").write_bytes(b'{"update": 0}\n\xff\xfe\n')
    study_lm.read_metrics(str(tmp_path), 1, 1)


def run_results_cut_short(tmp_path):
    (tmp_path / "results.json").write_text('{"learners": [1, 2')
    files.read_json(str(tmp_path / "results.json"))


def _arm(tmp_path, damage):
    """A finished arm stored, one of its files damaged, then read back: `load` gives None (the
    arm is trained again) and logs one line, raised here as the error under test."""
    logged = []
    store = arm_store.ArmStore(str(tmp_path), resume=True, log=logged.append)
    store.save("ppo", {"lr": 1e-3}, {"returns": np.arange(4.0)})
    damage(*store._paths("ppo"))
    assert store.load("ppo", {"lr": 1e-3}) is None
    raise ValueError(" | ".join(logged))


def arm_arrays_cut_short(tmp_path):
    def cut(arrays, meta):
        data = open(arrays, "rb").read()
        open(arrays, "wb").write(data[: len(data) // 2])

    _arm(tmp_path, cut)


def arm_settings_not_json(tmp_path):
    _arm(tmp_path, lambda arrays, meta: open(meta, "w").write('{"lr": '))


def _in_study(name):
    return lambda t: str(t / "results" / "study_x" / name)


# reader (damages a file and reads it) -> (the file it must name, words the line must hold)
READERS = {
    card_not_json: (_in_study("card.json"), "is not JSON (line 1"),
    card_without_figures: (_in_study("card.json"), "seed_sets[0] has no figures object"),
    card_bad_kind: (_in_study("card.json"), "kind='essay' is invalid"),
    results_not_json: (_in_study("results.json"), "is not JSON (line 1"),
    results_without_the_figure: (_in_study("results.json"), "has no ['arms', 'gap']"),
    results_missing: (_in_study("results.json"), "has a path but no"),
    study_metrics_bad_line: (lambda t: str(t / "metrics.jsonl"), "line 2 is not a JSON row"),
    study_metrics_not_utf8: (lambda t: str(t / "metrics.jsonl"), "is not UTF-8 text"),
    run_results_cut_short: (lambda t: str(t / "results.json"), "is not JSON (line 1, column"),
    arm_arrays_cut_short: (lambda t: str(t / "arms" / "ppo.npz"), "does not read"),
    arm_settings_not_json: (lambda t: str(t / "arms" / "ppo.json"), "is not JSON (line 1"),
}


@pytest.mark.parametrize("reader", list(READERS), ids=lambda f: f.__name__)
def test_a_file_that_does_not_read_is_named(reader, tmp_path):
    file_of, words = READERS[reader]
    with pytest.raises(ValueError) as info:
        reader(tmp_path)
    message = str(info.value)
    assert file_of(tmp_path) in message and words in message and "\n" not in message, message


def test_the_undamaged_files_read(tmp_path):
    """The control: the same layouts, undamaged, read."""
    results, _ = _card(tmp_path, GOOD_CARD, json.dumps({"arms": {"gap": 0.5}}))
    cards = _make_tables().load_cards(results)
    assert cards["study_x"]["seed_sets"][0]["figures"]["gap"]["value"] == 0.5
    (tmp_path / "metrics.jsonl").write_text(
        json.dumps({"update": 3, "grid": 0, "seed": 0, "loss": 1.0}) + "\n"
    )
    updates, _ = study_lm.read_metrics(str(tmp_path), 1, 1, keys=("loss",))
    assert list(updates) == [3]
    store = arm_store.ArmStore(str(tmp_path / "a"), resume=True, log=lambda line: None)
    store.save("ppo", {"lr": 1e-3}, {"returns": np.arange(4.0)})
    assert store.load("ppo", {"lr": 1e-3})["returns"].tolist() == [0.0, 1.0, 2.0, 3.0]
