"""learner_map="sequential" (rljax.parallel.population.map_learners): each device's learners one
after another equal the vmapped population (same keys, same sampled rewards, parameters within
the float floor), unsharded and with the population split over fake CPU devices; only one
learner's temporaries are alive per device; an unknown mode is refused before anything runs."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.parallel import mesh as mesh_lib
from rljax.parallel import population as learner_maps
from rljax.parallel import sharding
from rljax.train import population

WIDTH = 256  # a learner's temporary in _toy is [WIDTH, WIDTH] float32 (256 KiB)


def _toy(state, w):
    """One learner: a noisy step from its key, a large temporary, a scalar metric."""
    key, x = state
    key, sub = jax.random.split(key)
    big = jnp.tanh(jnp.outer(x, w) + jax.random.normal(sub, (WIDTH, WIDTH)))
    x = x + big @ w / WIDTH  # a product: `big` is materialized, not fused away
    return (key, x), {"norm": jnp.linalg.norm(x)}


def _toy_states(n):
    xs = jnp.arange(n * WIDTH, dtype=jnp.float32).reshape(n, WIDTH) / (n * WIDTH)
    return jax.random.split(jax.random.PRNGKey(0), n), xs


def _mapped(mode, groups):
    fn = lambda s, w: learner_maps.map_learners(_toy, s, w, groups=groups, mode=mode)  # noqa: E731
    return jax.jit(fn, donate_argnums=0)


def test_sequential_equals_vmap_unsharded_and_sharded():
    w = jnp.linspace(-1.0, 1.0, WIDTH)
    (want_keys, want_x), want_m = _mapped("vmap", 1)(_toy_states(8), w)
    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((4,), ("seeds",)), jax.devices()[:4])
    split = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("seeds"))
    for groups, place in ((1, lambda s: s), (4, lambda s: jax.device_put(s, split))):
        (keys, x), m = _mapped("sequential", groups)(place(_toy_states(8)), w)
        np.testing.assert_array_equal(jax.random.key_data(keys), jax.random.key_data(want_keys))
        np.testing.assert_allclose(x, want_x, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(m["norm"], want_m["norm"], rtol=1e-6)
        assert m["norm"].shape == (8,)
    assert x.sharding.spec[0] == "seeds"  # the population stays split over the devices


def _temp_bytes(mode, n):
    args = (_toy_states(n), jnp.ones(WIDTH))
    return _mapped(mode, 1).lower(*args).compile().memory_analysis().temp_size_in_bytes


def test_sequential_keeps_one_learners_temporaries_alive():
    big, one = WIDTH * WIDTH * 4, _temp_bytes("sequential", 1)  # a learner's temporaries
    assert one >= big
    assert _temp_bytes("vmap", 8) >= 7 * one  # every learner's at once
    # One learner's at a time: a loop's one extra buffer from 2 learners on, then flat.
    two = _temp_bytes("sequential", 2)
    assert two < 2 * one and _temp_bytes("sequential", 8) <= two


def test_unknown_learner_map_is_refused():
    with pytest.raises(ValueError, match=r"learner_map='scan' is unknown; .*vmap, sequential"):
        learner_maps.map_learners(_toy, _toy_states(2), jnp.ones(WIDTH), mode="scan")
    with pytest.raises(ValueError, match="learner_map='loop'"):
        population.Spec(None, None, None, None, 1, 1, learner_map="loop")


def test_lm_config_learner_map_is_checked_before_anything_is_built(tmp_path):
    from configs import grpo as grpo_config
    from rljax.train import lm_experiment

    c = grpo_config.get_config("arithmetic,tiny")
    c.learner_map = "sequentially"
    run = lm_experiment.from_config(c, str(tmp_path / "run"))
    with pytest.raises(ValueError, match="learner_map='sequentially' is unknown"):
        lm_experiment.validate(run)
    assert not (tmp_path / "run").exists()


STEPS = 4


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sequential_lora_population_equals_vmap_and_each_learner_alone(tmp_path):
    """4 tiny LoRA GRPO learners (2 step sizes x 2 seeds): sequential unsharded and over 2 fake
    devices (2 learners each, one at a time) sample the vmapped population's rewards exactly and
    equal each learner trained alone within 2e-5 (the vmapped members differ from it by the
    backward pass of the base folded over the learners, checked in test_lm_lora.py)."""
    from configs import grpo as grpo_config
    from rljax.train import lm_experiment

    c = grpo_config.get_config("arithmetic,tiny")
    c.data_dir, c.base_cache_dir = f"{tmp_path}/data", f"{tmp_path}/base"
    c.rl.reward = "random"  # rewards that vary within groups from the 20-step base: it moves
    c.run.steps = c.run.chunk_steps = STEPS
    c.run.eval_problems = 8
    c.lora.rank, c.lora.alpha = 2, 4.0
    c.sweep.learning_rate, c.num_seeds, c.progress = "1e-3,3e-3", 2, False
    run = lm_experiment.from_config(c, f"{tmp_path}/run")
    points = lm_experiment.validate(run)
    agent_cfg, data, hparams, _, _, _ = lm_experiment.build(run, points)
    vmap_spec = lm_experiment.spec(run, agent_cfg, data, hparams, points)
    seq_spec = dataclasses.replace(vmap_spec, learner_map="sequential")

    def train(spec, mesh=None):
        env = data if mesh is None else jax.device_put(data, sharding.replicated(mesh))
        states, shardings = population.init_on_mesh(spec, mesh)
        states, metrics = population.chunk_fn(spec, STEPS, shardings)(states, env)
        return jax.device_get(states.params), jax.device_get(metrics)

    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((2,), ("seeds",)), jax.devices()[:2])
    runs = {"vmap": train(vmap_spec), "sequential": train(seq_spec)}
    runs["sequential, 2 devices"] = train(seq_spec, mesh)
    solo_fn, solos = None, []
    for g in range(len(points)):  # seed 0 of each grid point, alone (learner 2 g)
        one = dataclasses.replace(
            vmap_spec, hparams=jax.tree.map(lambda h, g=g: h[g : g + 1], vmap_spec.hparams),
            grid=(points[g],), num_seeds=1,
        )  # fmt: skip
        solo_fn = solo_fn or population.chunk_fn(one, STEPS)
        solos.append(jax.device_get(solo_fn(population.init(one), data)))  # (states, metrics)

    def gap(a, b):
        return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))

    rewards = np.asarray(runs["vmap"][1]["reward/mean"])
    assert len(np.unique(rewards)) > 1  # rewards that vary: a real run
    for name, (params, metrics) in runs.items():
        for key in ("reward/mean", "response/length"):  # same keys, same sampled tokens
            np.testing.assert_array_equal(metrics[key], runs["vmap"][1][key], err_msg=name)
        for g, (solo, solo_metrics) in enumerate(solos):
            member = [np.asarray(x)[2 * g] for x in jax.tree.leaves(params)]
            alone = [np.asarray(x)[0] for x in jax.tree.leaves(solo.params)]
            if name != "vmap":
                assert gap(member, alone) < 2e-5, (name, g, gap(member, alone))
            np.testing.assert_array_equal(
                metrics["reward/mean"][2 * g], solo_metrics["reward/mean"][0]
            )
    paths = jax.tree_util.tree_leaves_with_path(runs["sequential"][0])
    assert max(float(np.max(np.abs(x))) for p, x in paths if "lora_b" in str(p)) > 0  # B moved
