"""The SFT base cache has one writer: two processes that need the same base at the same moment
train it once (the second waits for the first, then reads its base from the cache)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Both processes meet at a barrier (each writes ready-<i>, then waits for the other's), so both
# call train_or_load while neither has a cached base; training is slowed by 2 s so the second
# arrives while the first still trains.
_RUN = textwrap.dedent(
    """
    import json, os, sys, time
    from rljax.agents import sft
    from rljax.io import base_reference
    from rljax.lm.model.decoder import TransformerConfig
    from rljax.lm.tasks import TASKS, make_split
    from rljax.train import lm_base

    cache, me, other = sys.argv[1], sys.argv[2], sys.argv[3]
    train = lm_base.train
    def slow_train(*args, **kwargs):
        time.sleep(2.0)
        return train(*args, **kwargs)
    lm_base.train = slow_train
    task = TASKS["equation"]
    problems = make_split(task, num_per_level=5, seed=0)
    model = TransformerConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=24)
    cfg = sft.SFTConfig(steps=2, warmup_steps=1, batch_size=8)
    open(os.path.join(cache, "ready-" + me), "w").close()
    while not os.path.exists(os.path.join(cache, "ready-" + other)):
        time.sleep(0.01)
    params, info = lm_base.train_or_load(model, cfg, task, problems, os.path.join(cache, "c"))
    print(json.dumps({"cached": info["cached"], "path": info["path"],
                      "digest": base_reference.digest(params)}), flush=True)
    """
)


@pytest.mark.slow  # ~35 s: two processes import jax and compile SFT
@pytest.mark.timeout(300)
def test_two_processes_train_one_base_once_and_both_read_it(tmp_path):
    env = {**os.environ, "PYTHONPATH": ROOT}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RUN, str(tmp_path), me, other],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )  # fmt: skip
        for me, other in (("0", "1"), ("1", "0"))
    ]
    outs = [p.communicate(timeout=280)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    results = [json.loads(out.strip().splitlines()[-1]) for out in outs]
    # one trained it, the other waited (saying for whom) and read the cached base
    assert sorted(r["cached"] for r in results) == [False, True], outs
    waiter = outs[[r["cached"] for r in results].index(True)]
    assert "is being written by pid" in waiter and "waiting for it" in waiter
    assert results[0]["digest"] == results[1]["digest"]
    assert results[0]["path"] == results[1]["path"]
    # one base in the cache, one SFT run beside it (no second writer's files)
    cache = tmp_path / "c"
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == sorted(
        [os.path.basename(results[0]["path"]), os.path.basename(results[0]["path"]) + "-sft"]
    )
    rows = (cache / (os.path.basename(results[0]["path"]) + "-sft") / "metrics.jsonl").read_text()
    assert len(rows.splitlines()) == 2  # 2 SFT steps, written once
