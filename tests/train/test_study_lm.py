"""rljax.train.study_lm: a population's curves taken in memory equal those read back from the
metrics.jsonl the host loop writes (the record a reused or resumed population is read from)."""

import numpy as np

from rljax.io.metrics import MetricsWriter
from rljax.train import lm_experiment, loop, records, study_lm

G, S, CHUNK, CHUNKS = 2, 3, 4, 3  # grid points, seeds, updates per chunk, chunks


def _chunks(rng) -> list[dict]:
    """Metrics [A, CHUNK] of every chunk: quick evaluations only at chunk ends (NaN between),
    some updates that kept no group, and one learner never evaluated."""
    out = []
    for _ in range(CHUNKS):
        m = {k: rng.random((G * S, CHUNK)).astype(np.float32) for k in study_lm.CURVE_KEYS}
        del m["pass@1/mean"]  # the loop's row of the carried score, not a learner metric
        m["groups/kept_frac"][rng.random((G * S, CHUNK)) < 0.2] = 0.0
        score = np.full((G * S, CHUNK), np.nan, np.float32)
        score[:, -1] = rng.random(G * S)
        score[4] = np.nan
        m["eval/pass@1"] = score
        m["eval/pass@1/level2"] = np.where(np.isnan(score), np.nan, score / 2).astype(np.float32)
        m["curriculum/value1"] = rng.random((G * S, CHUNK)).astype(np.float32)
        out.append(m)
    return out


def test_curves_in_memory_equal_the_metrics_file(tmp_path):
    chunks = _chunks(np.random.default_rng(0))
    cfg = loop.LoopConfig(
        workdir=str(tmp_path), title="t", num_updates=CHUNK * CHUNKS, chunk_updates=CHUNK,
        checkpoint_every=1, env_steps_per_update=8, num_seeds=S,
        grid=tuple({"preset": p} for p in ("a", "b")), resume=False,
        **lm_experiment.LOOP_OPTIONS,
    )  # fmt: skip
    writer, carried = MetricsWriter(str(tmp_path)), np.full(G * S, np.nan)
    writer.reset()
    for c, metrics in enumerate(chunks):
        writer.write(records.rows(cfg, metrics, c * CHUNK, carried))
    disk_updates, disk = study_lm.read_curves(str(tmp_path), G, S)
    kept = {k: np.concatenate([m[k] for m in chunks], 1) for k in chunks[0]}
    updates, memory = study_lm.curves_in_memory(kept, G, S)
    np.testing.assert_array_equal(updates, disk_updates)
    assert set(memory) == set(disk)
    for key in disk:
        np.testing.assert_array_equal(memory[key], disk[key], err_msg=key)
    assert np.isnan(memory["pass@1/mean"][1, 1]).all()  # learner 4: never evaluated
    assert np.isfinite(memory["pass@1/mean"][0, 0, CHUNK - 1 :]).all()  # carried forward
    assert np.isnan(memory["entropy"]).any()  # updates that kept no group


def test_in_memory_results_have_the_results_json_shape():
    evaluation = {"pass@1": 0.5, "pass@1_by_level": {1: 0.75, 3: 0.25}, "num_problems": 8}
    outcome = lm_experiment.Outcome(
        None, None, base=evaluation, learners=[evaluation] * 2, values=[{"lr": 1.0}] * 2
    )
    res = study_lm.in_memory(outcome)
    assert res["base"]["pass@1_by_level"] == {"1": 0.75, "3": 0.25}  # as JSON names them
    assert [m["pass@1"] for m in res["learners"]] == [0.5, 0.5]
    assert [a["hparams"] for a in res["arms"].values()] == [{"lr": 1.0}] * 2
