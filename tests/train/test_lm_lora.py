"""LoRA populations over one frozen base: a member equals the same learner trained alone
(identical sampled rewards, adapters within the float floor), unsharded and with the population
axis sharded over fake CPU devices (base replicated) and with the learners run one at a time
(`learner_map="sequential"`); a resume over another base is refused.

The comparison runs in a subprocess (`python tests/train/test_lm_lora.py DIR`) so that it can
ask XLA for 2 fake CPU devices before jax starts."""

import dataclasses
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

LRS = "1e-3,3e-3"  # two grid points: LoRA learners at two step sizes
STEPS = 4


def _run_config(tmp):
    from configs import grpo as grpo_config
    from rljax.train import lm_experiment

    c = grpo_config.get_config("arithmetic,tiny")
    c.data_dir, c.base_cache_dir = f"{tmp}/data", f"{tmp}/base"
    c.sft.steps = 150  # a base that is right sometimes, so rewards vary within groups
    c.run.steps = c.run.chunk_steps = STEPS
    c.run.eval_problems = 8
    c.lora.rank, c.lora.alpha = 2, 4.0
    c.sweep.learning_rate = LRS
    c.progress = False
    return lm_experiment.from_config(c, f"{tmp}/run")


def _compare(tmp) -> dict:
    """Population (unsharded and over 2 devices) vs each learner alone; returns the gaps."""
    import jax

    from rljax.parallel import mesh as mesh_lib
    from rljax.parallel import sharding
    from rljax.train import lm_experiment, population

    run = _run_config(tmp)
    points = lm_experiment.validate(run)
    agent_cfg, data, hparams, _, _, _ = lm_experiment.build(run, points)
    spec = lm_experiment.spec(run, agent_cfg, data, hparams, points)

    def train(spec, mesh=None):
        env = data if mesh is None else jax.device_put(data, sharding.replicated(mesh))
        states, shardings = population.init_on_mesh(spec, mesh)
        return population.chunk_fn(spec, STEPS, shardings)(states, env), env

    (pop, pop_metrics), _ = train(spec)
    # learner_map="sequential": the device's two learners one after another, not stacked.
    (seq, seq_metrics), _ = train(dataclasses.replace(spec, learner_map="sequential"))
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2,), ("seeds",)))
    (sharded, sharded_metrics), env = train(spec, mesh)
    base_leaf = jax.tree.leaves(env.base_params)[0]
    adapter_leaf = jax.tree.leaves(sharded.params)[0]

    def gap(a, b) -> float:  # the largest entry-wise difference of two parameter trees
        return max(jax.tree.leaves(jax.tree.map(lambda x, y: float(np.max(np.abs(x - y))), a, b)))

    def learner(states, i):
        return jax.tree.map(lambda x: np.asarray(x)[i], jax.device_get(states.params))

    def rewards(metrics, i):
        return np.asarray(metrics["reward/mean"][i])

    solo_fn, split_fn = None, None
    out = {"reward_gap": 0.0, "param_gap": 0.0, "sharded_param_gap": 0.0, "gap_over_floor": 0.0}
    out["split_reward_gap"], out["floors"], out["rewards"] = 0.0, [], []
    out["seq_param_gap"] = 0.0
    for g in range(len(points)):
        one = dataclasses.replace(
            spec,
            hparams=jax.tree.map(lambda h, g=g: h[g : g + 1], spec.hparams),
            grid=(points[g],),
        )
        solo_fn = solo_fn or population.chunk_fn(one, STEPS)  # one compile for both learners
        solo, solo_metrics = solo_fn(population.init(one), data)
        # The learner's float floor: alone again, every minibatch gradient summed over twice
        # the micro-batches (the same maths rounded differently at every step).
        split_one = dataclasses.replace(
            one,
            config=dataclasses.replace(
                spec.config, max_minibatches=2 * spec.config.max_minibatches
            ),
        )
        split_fn = split_fn or population.chunk_fn(split_one, STEPS)
        split, split_metrics = split_fn(population.init(split_one), data)
        alone = learner(solo, 0)
        floor = gap(learner(split, 0), alone)
        out["floors"].append(floor)
        split_gap = np.max(np.abs(rewards(split_metrics, 0) - rewards(solo_metrics, 0)))
        out["split_reward_gap"] = max(out["split_reward_gap"], float(split_gap))
        for metrics in (pop_metrics, sharded_metrics, seq_metrics):
            for name in ("reward/mean", "correct/mean"):
                diff = np.asarray(metrics[name][g]) - np.asarray(solo_metrics[name][0])
                out["reward_gap"] = max(out["reward_gap"], float(np.max(np.abs(diff))))
        member = gap(learner(pop, g), alone)
        out["param_gap"] = max(out["param_gap"], member)
        out["sharded_param_gap"] = max(out["sharded_param_gap"], gap(learner(sharded, g), alone))
        out["seq_param_gap"] = max(out["seq_param_gap"], gap(learner(seq, g), alone))
        out["gap_over_floor"] = max(out["gap_over_floor"], member / max(floor, 1e-12))
        out["rewards"].append(rewards(solo_metrics, 0).tolist())
    moved = jax.tree.map(lambda p: float(np.max(np.abs(np.asarray(p)))), pop.params)
    out["max_b"] = max(
        v
        for path, v in jax.tree_util.tree_leaves_with_path(moved)
        if "lora_b" in jax.tree_util.keystr(path)
    )  # noqa: E501
    out["base_replicated"] = (
        base_leaf.sharding.is_fully_replicated and len(base_leaf.sharding.device_set) == 2
    )  # noqa: E501
    out["adapters_split"] = adapter_leaf.sharding.spec[0] == "seeds"
    out["adapter_shape"] = list(adapter_leaf.shape)
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_lora_population_member_equals_the_learner_alone_unsharded_and_sharded(tmp_path):
    # 2 fake devices; the tier's other flags (tests/conftest.py) kept.
    flags = re.sub(r"device_count=\d+", "device_count=2", os.environ["XLA_FLAGS"])
    env = {**os.environ, "XLA_FLAGS": flags}
    done = subprocess.run(
        [sys.executable, __file__, str(tmp_path)], capture_output=True, text=True, env=env,
        timeout=880,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["reward_gap"] == 0.0  # identical sampled rewards, every update
    # Sharded (one learner per device): the solo program's rounding, params within 2e-5.
    assert out["sharded_param_gap"] < 2e-5, out
    # Sequential (learner_map): the two learners one at a time on one device, likewise.
    assert out["seq_param_gap"] < 2e-5, out
    # Two learners on one device: sampling and log-probs are bitwise the solo ones, but the
    # backward pass of the base product folded over both learners rounds differently and
    # Adam's normalized steps turn that into up to lr-sized moves of near-zero-gradient
    # adapter entries. The learner alone does the same under any other rounding: its split
    # floor (measured 0.0049 at lr 1e-3, 0.018 at 3e-3; the member 0.011 and 0.038, 2.2x and
    # 2.1x). A member is equal within 10x its floor, the bar of the full-parameter populations
    # (scripts/check_preset_equality.py).
    assert out["split_reward_gap"] == 0.0, out  # the floor run samples the same rewards
    assert min(out["floors"]) > 0 and out["gap_over_floor"] <= 10.0, out
    assert out["max_b"] > 0  # the adapters moved: B left zero
    assert any(len(set(r)) > 1 for r in out["rewards"])  # rewards that vary: a real run
    assert out["base_replicated"] and out["adapters_split"], out
    assert out["adapter_shape"][0] == 2  # adapters carry the population axis; the base does not


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    print(json.dumps(_compare(sys.argv[1])))
