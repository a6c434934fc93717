"""rljax.train.arm_store: finished arms persist and are reused on resume; an interrupted
population stops the study."""

import dataclasses
import json
import os

import numpy as np
import pytest

from rljax.train import arm_store


def test_arm_store_reuses_only_matching_arms(tmp_path):
    store = arm_store.ArmStore(str(tmp_path), resume=False, log=lambda s: None)
    settings = {"seeds": 8, "grid": [{"lr": 1e-3}]}
    store.save("CartPole mse", settings, {"ret": np.arange(6.0).reshape(2, 3)})
    again = arm_store.ArmStore(str(tmp_path), resume=True, log=lambda s: None)
    np.testing.assert_array_equal(
        again.load("CartPole mse", settings)["ret"], [[0, 1, 2], [3, 4, 5]]
    )
    assert again.load("CartPole mse", {**settings, "seeds": 4}) is None  # other settings
    assert again.load("CartPole huber", settings) is None  # never finished
    fresh = arm_store.ArmStore(str(tmp_path), resume=False, log=lambda s: None)
    assert fresh.load("CartPole mse", settings) is None  # a fresh run clears old arms


def test_cached_computes_once_with_resume(tmp_path):
    calls = []
    compute = lambda: calls.append(1) or {"x": 1}  # noqa: E731
    kw = dict(resume=True, log=lambda s: None)
    assert arm_store.cached(str(tmp_path), "env A", {"s": 1}, compute, **kw) == {"x": 1}
    assert arm_store.cached(str(tmp_path), "env A", {"s": 1}, compute, **kw) == {"x": 1}
    assert len(calls) == 1
    arm_store.cached(str(tmp_path), "env A", {"s": 2}, compute, **kw)  # settings changed
    arm_store.cached(str(tmp_path), "env A", {"s": 2}, compute, resume=False, log=print)
    assert len(calls) == 3


@dataclasses.dataclass
class _Summary:
    interrupted: bool
    stop_signal: int = 0
    updates_done: int = 0


def test_an_interrupted_population_stops_the_study():
    arm_store.stop_if_interrupted("one", _Summary(False))
    with pytest.raises(
        arm_store.StudyInterrupted, match=r"one was stopped \(signal 15\) at update 7"
    ):
        arm_store.stop_if_interrupted("one", _Summary(True, 15, 7))


@dataclasses.dataclass
class _Run:
    workdir: str
    steps: int = 10
    progress: bool = True


def test_lm_population_states(tmp_path):
    from rljax.io import fingerprint

    run = _Run(str(tmp_path / "pop"))
    assert arm_store.lm_population(run, ("progress",)) == "fresh"  # nothing there
    fingerprint.save(run.workdir, dataclasses.asdict(run))
    assert arm_store.lm_population(run, ("progress",)) == "resume"  # started, not finished
    with open(os.path.join(run.workdir, "summary.json"), "w") as f:
        json.dump({"status": "done"}, f)
    with open(os.path.join(run.workdir, "results.json"), "w") as f:
        f.write("{}")
    assert arm_store.lm_population(run, ("progress",)) == "done"
    assert (
        arm_store.lm_population(dataclasses.replace(run, progress=False), ("progress",)) == "done"
    )
    assert arm_store.lm_population(dataclasses.replace(run, steps=20), ("progress",)) == "fresh"
    # a budget the trainer may extend: resumed, never reused as if it were finished
    assert arm_store.lm_population(dataclasses.replace(run, steps=20), ("steps", "progress")) == (
        "resume"
    )
