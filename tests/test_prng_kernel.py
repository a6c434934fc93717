"""The compiled Threefry kernel (``rljax.prng_kernel``): active where a C++ compiler is, bit for
bit jax's own lowering (the Random123 known answer, every kind of draw, a learner's whole
update), jax's lowering kept on a device mesh, and a clear warning, not an error, when it
cannot be built."""

import os
import subprocess
import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from rljax import envs, prng_kernel
from rljax.agents import td3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_COMPILER = prng_kernel.compiler() is not None


def _draws(key):
    """One of each kind of draw the learners make (splits, fold-ins, vmapped keys...)."""
    keys = jax.random.split(key, 4)
    return {
        "split": jax.random.split(key, 7),
        "fold_in": jax.random.fold_in(key, 123),
        "uniform": jax.random.uniform(key, (3, 1001)),
        "normal": jax.random.normal(keys[0], (17,)),
        "randint": jax.random.randint(keys[1], (9,), 0, 100),
        "permutation": jax.random.permutation(keys[2], 50),
        "bernoulli": jax.random.bernoulli(keys[3], 0.3, (64,)),
        "scalar": jax.random.uniform(key),
        "vmapped": jax.vmap(lambda k: jax.random.normal(k, (5, 3)))(keys),
        "vmapped_fold_in": jax.vmap(jax.random.fold_in)(keys, jnp.arange(4)),
        "gamma": jax.random.gamma(key, 2.0, (10,)),
        "categorical": jax.random.categorical(key, jnp.zeros((4, 6))),
        "empty": jax.random.normal(key, (0, 3)),
    }


def _compiled(fn, *args, kernel: bool):
    """``fn`` lowered and compiled with the kernel on or off (a fresh jit each time)."""
    with prng_kernel.use_kernel(kernel):
        lowered = jax.jit(lambda *a: fn(*a)).lower(*args)
    return lowered.as_text(), lowered.compile()


def test_the_kernel_is_active_where_a_compiler_is():
    if not HAS_COMPILER:
        assert "compiler" in prng_kernel.status()
        return
    assert prng_kernel.status() == "active"
    hlo, _ = _compiled(lambda k: jax.random.normal(k, (3,)), jax.random.PRNGKey(0), kernel=True)
    assert prng_kernel.TARGET in hlo


def test_random123_known_answer():
    """Threefry-2x32, 20 rounds: key (0x13198a2e, 0x03707344), counter (0x243f6a88, 0x85a308d3)
    hashes to (0xc4923a9c, 0x483df7a0) (Salmon et al. 2011, the Random123 known-answer test)."""
    from jax._src.random import threefry2x32

    key = np.array([0x13198A2E, 0x03707344], np.uint32)
    count = np.array([0x243F6A88, 0x85A308D3], np.uint32)
    for kernel in (True, False):
        hlo, compiled = _compiled(threefry2x32.threefry_2x32, key, count, kernel=kernel)
        assert (prng_kernel.TARGET in hlo) == (kernel and HAS_COMPILER)
        np.testing.assert_array_equal(compiled(key, count), [0xC4923A9C, 0x483DF7A0])


def test_every_kind_of_draw_matches_jax_lowering_bit_for_bit():
    key = jax.random.PRNGKey(42)
    hlo, with_kernel = _compiled(_draws, key, kernel=True)
    hlo_jax, with_jax = _compiled(_draws, key, kernel=False)
    assert prng_kernel.TARGET not in hlo_jax
    if HAS_COMPILER:
        assert hlo.count(prng_kernel.TARGET) >= 10
    ours, theirs = with_kernel(key), with_jax(key)
    for name in theirs:
        assert ours[name].dtype == theirs[name].dtype and ours[name].shape == theirs[name].shape
        assert np.asarray(ours[name]).tobytes() == np.asarray(theirs[name]).tobytes(), name


TD3_TINY = td3.Config(num_envs=2, rollout_steps=4, buffer_size=64, batch_size=8, learning_starts=8,
                      hidden=(8,), grad_steps=2, policy_delay=2, num_updates=2)  # fmt: skip
TD3_HP = td3.Hparams(1e-3, 1e-3, 0.99, 0.05, 0.1, 0.2, 0.5)


def td3_run(kernel: bool):
    """Two updates of a tiny TD3 from one key, lowered with or without the kernel: (HLO, out)."""
    env = envs.make("Pendulum-v1")
    train = lambda k: td3.train_chunk(TD3_TINY, env, td3.init(TD3_TINY, env, k, TD3_HP), 2)  # noqa: E731
    key = jax.random.PRNGKey(3)
    hlo, compiled = _compiled(train, key, kernel=kernel)
    return hlo, compiled(key)


def test_td3_updates_agree_with_the_kernel_at_the_test_tier_level():
    """Collecting, replay sampling, target smoothing and the delayed actor, in this tier's XLA
    settings (optimization level 0): the draws are the same, but XLA may fuse the float maths
    around the custom call differently and round a gradient differently in the last bit."""
    (hlo, with_kernel), (_, with_jax) = td3_run(True), td3_run(False)
    assert (prng_kernel.TARGET in hlo) == HAS_COMPILER
    chex.assert_trees_all_close(with_kernel, with_jax, rtol=1e-6, atol=1e-7)


TRAINER_SETTINGS = """
from rljax import xla_flags
xla_flags.set_flags(cpu_threads=1, fast_compile=True)
from rljax import prng_kernel
prng_kernel.install()
import sys, jax, numpy as np
sys.path.insert(0, "tests")
from test_prng_kernel import td3_run
(hlo, ours), (_, theirs) = td3_run(True), td3_run(False)
same = [np.asarray(a).tobytes() for a in jax.tree.leaves(ours)] == [
    np.asarray(b).tobytes() for b in jax.tree.leaves(theirs)]
print("rljax_threefry2x32" in hlo, same)
"""


def test_td3_updates_are_bit_for_bit_the_same_at_the_trainers_settings(run_at_trainer_settings):
    """At the trainer's XLA settings (``xla_flags.set_flags(fast_compile=True)``: level 1 and the
    default emitters) the whole run is bit for bit the same with either lowering."""
    out = run_at_trainer_settings(TRAINER_SETTINGS, timeout=240)
    assert out.split() == [str(HAS_COMPILER), "True"]


def test_a_mesh_keeps_jax_lowering_and_its_numbers():
    """Partitioned over two devices the program keeps jax's lowering: no custom call, so nothing
    is gathered onto every device."""
    mesh = jax.make_mesh((2,), ("seeds",), axis_types=(jax.sharding.AxisType.Auto,))
    seeds = NamedSharding(mesh, PartitionSpec("seeds"))
    keys = jax.device_put(jax.random.split(jax.random.PRNGKey(1), 4), seeds)
    draw = jax.vmap(lambda k: jax.random.normal(k, (100,)))
    sharded = jax.jit(lambda k: draw(k), in_shardings=seeds, out_shardings=seeds).lower(keys)
    assert prng_kernel.TARGET not in sharded.as_text()
    assert "all-gather" not in sharded.compile().as_text()
    _, alone = _compiled(draw, np.asarray(keys), kernel=True)
    np.testing.assert_array_equal(sharded.compile()(keys), alone(np.asarray(keys)))


def test_jax_export_keeps_jax_lowering():
    """Exported programs may only call jax's own targets: the kernel stays out of them."""
    draw = jax.jit(lambda k: jax.random.normal(k, (8,)))
    key = jax.random.PRNGKey(2)
    exported = jax.export.export(draw)(key)
    assert prng_kernel.TARGET not in exported.mlir_module()
    np.testing.assert_array_equal(exported.call(key), draw(key))


def _status_in_a_fresh_process(**env) -> subprocess.CompletedProcess:
    code = (
        "import warnings, jax; warnings.simplefilter('always')\n"
        "from rljax import prng_kernel\n"
        "prng_kernel.install()\n"
        "hlo = jax.jit(lambda k: jax.random.normal(k, (3,))).lower(jax.random.PRNGKey(0))\n"
        "print(prng_kernel.status(), '|', prng_kernel.TARGET in hlo.as_text())\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, cwd=ROOT, timeout=120)  # fmt: skip


def test_switched_off_or_unbuildable_it_keeps_jax_lowering(tmp_path):
    off = _status_in_a_fresh_process(RLJAX_THREEFRY_KERNEL="0")
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip() == "RLJAX_THREEFRY_KERNEL=0 | False"
    assert "prng_kernel" not in off.stderr  # asked for: no warning
    broken = _status_in_a_fresh_process(CXX=str(tmp_path / "no-such-compiler"),
                                        RLJAX_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    assert broken.returncode == 0, broken.stderr
    assert broken.stdout.strip().startswith("building ") and "| False" in broken.stdout
    assert (
        "rljax.prng_kernel: building" in broken.stderr
        and "RLJAX_THREEFRY_KERNEL=0" in broken.stderr
    )


@pytest.mark.skipif(not HAS_COMPILER, reason="no C++ compiler")
def test_cache_is_keyed_and_reused(tmp_path):
    """A fresh cache directory gets one built library; a second process loads it."""
    cache = tmp_path / "cache"
    for _ in range(2):
        done = _status_in_a_fresh_process(RLJAX_CACHE_DIR=str(cache))
        assert done.returncode == 0 and done.stdout.strip() == "active | True", done.stderr
    assert len([f for f in os.listdir(cache) if f.endswith(".so")]) == 1
