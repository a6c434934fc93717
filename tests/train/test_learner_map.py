"""learner_map="sequential" (rljax.parallel.learner_axis.map_learners): each device's learners one
after another equal the vmapped population (same keys, same sampled rewards, parameters within
the float floor), unsharded and with the population split over fake CPU devices; only one
learner's temporaries are alive per device; an unknown mode is refused before anything runs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.parallel import learner_axis
from rljax.parallel import mesh as mesh_lib
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
    fn = lambda s, w: learner_axis.map_learners(_toy, s, w, groups=groups, mode=mode)  # noqa: E731
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
    # One learner's at a time: a loop's one extra buffer from 2 learners on, then flat but for
    # a few KiB of per-learner keys and metrics (6 KiB from 2 to 8 learners with the Threefry
    # kernel of rljax.prng_kernel, whose draws' counters are buffers; 1/64 of a learner's here).
    two = _temp_bytes("sequential", 2)
    assert two < 2 * one and _temp_bytes("sequential", 8) <= two + one // 64


def test_unknown_learner_map_is_refused():
    with pytest.raises(ValueError, match=r"learner_map='scan' is unknown; .*vmap, sequential"):
        learner_axis.map_learners(_toy, _toy_states(2), jnp.ones(WIDTH), mode="scan")
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


def test_a_population_of_one_runs_unbatched_and_equals_its_member():
    """One learner: the same numbers as that learner alone, its axis put back, and no vmap in
    the program (XLA:CPU reduces over a leading axis of one several times slower)."""
    w = jnp.linspace(-1.0, 1.0, WIDTH)
    key, x = jax.tree.map(lambda v: v[0], _toy_states(1))
    (want_key, want_x), want_m = jax.jit(_toy)((key, x), w)
    fn = lambda s, w: learner_axis.map_learners(_toy, s, w)  # noqa: E731
    (keys, xs), m = jax.jit(fn)(_toy_states(1), w)
    assert xs.shape == (1, WIDTH) and m["norm"].shape == (1,)
    np.testing.assert_array_equal(jax.random.key_data(keys[0]), jax.random.key_data(want_key))
    np.testing.assert_allclose(xs[0], want_x, rtol=1e-6, atol=1e-6)
    # The program's products are unbatched ([W] x [W, W]), not [1, W] x [1, W, W].
    hlo = jax.jit(fn).lower(_toy_states(1), w).as_text()
    assert "tensor<1x256x256xf32>" not in hlo and "tensor<256x256xf32>" in hlo
