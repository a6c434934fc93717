"""Env-step throughput of one brax task per physics backend, through rljax's adapter.

    PYTHONPATH=$PWD python scripts/brax_env_speed.py --task=inverted_pendulum --num_envs=16

Random actions in [-1, 1], ``--steps`` batched steps as one jitted ``lax.scan`` of
``rljax.envs.step`` (automatic resets included); prints compile and run seconds and env steps
per second for each backend, one line each as it finishes, and the mean return of the
episodes the random actions ended (the random-policy reference). Needs the brax extra.
"""

import argparse
import time

import jax
import jax.numpy as jnp

from rljax import envs, prng_kernel
from rljax.envs import brax_env


def measure(name: str, num_envs: int, steps: int) -> dict:
    """Build, compile and run ``steps`` batched random steps; returns timings."""
    t0 = time.perf_counter()
    env = envs.make(name)
    state = envs.reset(env, jax.random.PRNGKey(0), num_envs)

    @jax.jit
    def run(state, key):
        def body(s, k):
            k_act, k_env = jax.random.split(k)
            action = jax.random.uniform(k_act, (num_envs, env.num_actions), minval=-1, maxval=1)
            s, res = envs.step(env, k_env, s, action)
            done = res.done.astype(jnp.float32)
            return s, (done.sum(), (res.episode_return * done).sum())

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    t1 = time.perf_counter()
    compiled = run.lower(state, jax.random.PRNGKey(1)).compile()
    t2 = time.perf_counter()
    out = compiled(state, jax.random.PRNGKey(1))
    jax.block_until_ready(out)
    t3 = time.perf_counter()
    return {
        "build_s": t1 - t0,
        "compile_s": t2 - t1,
        "run_s": t3 - t2,
        "steps_per_s": num_envs * steps / (t3 - t2),
        "episodes": int(jnp.sum(out[1][0])),
        "random_return": float(jnp.sum(out[1][1]) / jnp.maximum(jnp.sum(out[1][0]), 1)),
    }


def main():
    prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="inverted_pendulum")
    parser.add_argument("--backends", default=",".join(brax_env.BACKENDS))
    parser.add_argument("--num_envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    for backend in args.backends.split(","):
        r = measure(f"brax/{args.task}/{backend}", args.num_envs, args.steps)
        print(
            f"{args.task} {backend}: build {r['build_s']:.1f} s, compile {r['compile_s']:.1f} s,"
            f" run {r['run_s']:.2f} s, {r['steps_per_s']:,.0f} env steps/s"
            f" ({args.num_envs} envs x {args.steps} steps; {r['episodes']} episodes ended,"
            f" mean return {r['random_return']:.1f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
