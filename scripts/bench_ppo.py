"""Benchmark: the main job's wall-clock, CartPole PPO throughput at 1/8/16/64 seeds, and raw env
stepping vs bare gymnax.

    python scripts/bench_ppo.py [--main] [--seeds=1,8,16,64] [--envs=1,256,4096]

``--main`` first times the README's main job end to end, as a user runs it: a fresh
``python experiments/train.py --config=configs/ppo.py:CartPole-v1`` process (imports, compile,
8 seeds x 500k steps, checkpoints, metrics and plots), wall-clock from process start to exit.

The throughput table uses the classic single-file JAX PPO setup: 4 envs x 128 steps, 4 epochs,
4 minibatches, 64x64 tanh MLP, lr 2.5e-4 annealed, 500k env steps per seed. Prints the machine it
ran on.
"""

from rljax import xla_flags

xla_flags.set_flags()

import argparse  # noqa: E402
import functools  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import envs, machine  # noqa: E402
from rljax.agents import ppo  # noqa: E402
from rljax.train import experiment  # noqa: E402

CLASSIC = ppo.Config(
    num_envs=4, num_steps=128, num_epochs=4, num_minibatches=4, hidden=(64, 64), num_updates=976
)
HPARAMS = ppo.Hparams(2.5e-4, 0.2, 0.01, 0.5, 0.99, 0.95)


def bench_ppo(num_seeds: int, total_steps: int) -> dict:
    env = envs.make("CartPole-v1")
    updates = total_steps // ppo.env_steps_per_update(CLASSIC)
    config = CLASSIC.__class__(**{**CLASSIC.__dict__, "num_updates": updates})
    keys = jax.random.split(jax.random.PRNGKey(0), num_seeds)
    hp = ppo.Hparams(*(jnp.full(num_seeds, h, jnp.float32) for h in HPARAMS))
    states = jax.jit(jax.vmap(functools.partial(ppo.init, config, env)))(keys, hp)
    jax.block_until_ready(states)
    fn = experiment.make_chunk_fn(ppo, config, env, updates)
    t0 = time.perf_counter()
    compiled = fn.lower(states).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    states, metrics = compiled(states)
    jax.block_until_ready(metrics)
    run_s = time.perf_counter() - t0
    returns = np.asarray(metrics["episode/return"])[:, -10:]
    with np.errstate(all="ignore"):
        final = np.nanmean(returns, axis=1)
    steps = num_seeds * updates * ppo.env_steps_per_update(config)
    return dict(compile_s=compile_s, run_s=run_s, sps=steps / run_s, final=final)


def _random_steps(step_fn, env, num_envs: int, num_steps: int):
    """A jitted scan of uniformly random actions through ``step_fn``."""

    def run(key):
        state = envs.reset(env, key, num_envs)

        def body(carry, k):
            a_key, s_key = jax.random.split(k)
            action = jax.random.randint(a_key, (num_envs,), 0, env.num_actions)
            carry, reward = step_fn(s_key, carry, action)
            return carry, reward.sum()

        return jax.lax.scan(body, state, jax.random.split(key, num_steps))[1].sum()

    return jax.jit(run)


def _adapter_step(env, key, state, action):
    state, res = envs.step(env, key, state, action)
    return state, res.reward


def _bare_step(env, key, state, action):
    keys = jax.random.split(key, action.shape[0])
    obs, env_state, reward, _, _, _ = jax.vmap(env.env.step, in_axes=(0, 0, 0, None))(
        keys, state.env_state, action, env.params
    )
    return state._replace(env_state=env_state, obs=obs), reward


def bench_env(num_envs: int, total_steps: int, repeats: int = 3) -> tuple[float, float]:
    env = envs.make("CartPole-v1")
    num_steps = max(1, total_steps // num_envs)
    fns = {
        "adapter": _random_steps(functools.partial(_adapter_step, env), env, num_envs, num_steps),
        "bare": _random_steps(functools.partial(_bare_step, env), env, num_envs, num_steps),
    }
    best = {}
    for fn in fns.values():
        fn(jax.random.PRNGKey(0)).block_until_ready()
    for r in range(repeats):  # interleave to share the machine's noise
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn(jax.random.PRNGKey(r + 1)).block_until_ready()
            best[name] = min(best.get(name, np.inf), time.perf_counter() - t0)
    steps = num_envs * num_steps
    return steps / best["bare"], steps / best["adapter"]


def bench_main_job() -> tuple[float, str]:
    """Wall-clock of the main job as a fresh process, and its one-line summary."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as workdir:
        cmd = [
            sys.executable,
            os.path.join(root, "experiments", "train.py"),
            "--config=" + os.path.join(root, "configs", "ppo.py") + ":CartPole-v1",
            f"--workdir={workdir}",
            "--config.progress=False",
        ]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        wall = time.perf_counter() - t0
    return wall, next(line for line in out.splitlines() if "done |" in line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,8,16,64", help="comma-separated seed counts")
    parser.add_argument("--envs", default="1,256,4096", help="comma-separated env counts")
    parser.add_argument("--steps", type=int, default=500_000, help="env steps per seed")
    parser.add_argument(
        "--env-steps", type=int, default=2_000_000, help="random steps per env test"
    )
    parser.add_argument("--main", action="store_true", help="time the main job first")
    args = parser.parse_args()
    print(f"machine: {machine.describe()}")
    if args.main:
        wall, summary = bench_main_job()
        print(f"main job (configs/ppo.py:CartPole-v1), process wall-clock {wall:.1f} s")
        print(f"  {summary}")
    print("PPO CartPole-v1, 4 envs x 128 steps, 4 epochs x 4 minibatches, 64x64 tanh")
    print(f"{'seeds':>6} {'compile s':>10} {'run s':>8} {'env-steps/s':>12} {'final return':>14}")
    for s in (int(v) for v in args.seeds.split(",")):
        r = bench_ppo(s, args.steps)
        fin = f"{np.nanmean(r['final']):.1f}/{np.nanmin(r['final']):.0f}"
        print(f"{s:>6} {r['compile_s']:>10.2f} {r['run_s']:>8.2f} {r['sps']:>12,.0f} {fin:>14}")
    print("random-action env stepping (CartPole-v1), best of 3, interleaved")
    print(f"{'envs':>6} {'bare gymnax/s':>14} {'rljax adapter/s':>16} {'adapter/bare':>13}")
    for n in (int(v) for v in args.envs.split(",")):
        bare, adapter = bench_env(n, min(args.env_steps, max(n * 2000, 200_000)))
        print(f"{n:>6} {bare:>14,.0f} {adapter:>16,.0f} {adapter / bare:>13.2f}")


if __name__ == "__main__":
    main()
