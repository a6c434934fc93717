"""Benchmarks CartPole DQN: compile time, run time and env-steps/s at 1 and 8 seeds.

    PYTHONPATH=$PWD python scripts/bench_dqn.py [--seeds=1,8] [--total_timesteps=500000]

The setup is the classic single-file JAX DQN (purejaxrl's port of CleanRL's dqn_jax): 500k env
steps, 10 envs, 10k-transition buffer, batch 128, learning starts at 10k steps, one gradient step
every 10 env steps (= every update), target copy every 500 steps, ε 1.0 -> 0.05 over 250k steps,
lr 2.5e-4, a 120x84 ReLU MLP. The whole run is one jitted, vmapped program (one chunk, no host
loop, no checkpoints), as in the reference. The final return is the mean of the episodes that
ended in the last 5% of the run, per seed.
"""

from rljax import xla_flags

xla_flags.set_flags()

import argparse  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from rljax import envs, machine  # noqa: E402
from rljax.agents import dqn  # noqa: E402
from rljax.train import sweep  # noqa: E402

HPARAMS = {"lr": 2.5e-4, "gamma": 0.99, "eps_start": 1.0, "eps_end": 0.05,
           "eps_decay_steps": 250_000, "hl_sigma": 0.75, "reward_noise": 0.0}  # fmt: skip


def bench(num_seeds: int, total_timesteps: int, head: str) -> dict:
    """Compiles and runs the whole training of ``num_seeds`` agents; returns timings."""
    config = dqn.Config(head=head)
    num_updates = total_timesteps // dqn.env_steps_per_update(config)
    config = dqn.Config(head=head, num_updates=num_updates)
    dqn.validate(config)
    env = envs.make("CartPole-v1")
    grid = sweep.stack([HPARAMS], num_seeds)
    hparams = dqn.Hparams(**{k: grid[k] for k in dqn.Hparams._fields})
    keys = jax.random.split(jax.random.PRNGKey(0), num_seeds)

    def train(key, hp):  # init and the whole run in one program, as in the reference
        state = dqn.init(config, env, key, hp)
        return dqn.train_chunk(config, env, state, num_updates)

    t0 = time.perf_counter()
    compiled = jax.jit(jax.vmap(train)).lower(keys, hparams).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, metrics = compiled(keys, hparams)
    ret = np.asarray(jax.block_until_ready(metrics["episode/return"]))  # [S, U]
    cnt = np.asarray(metrics["episode/count"])
    run_s = time.perf_counter() - t0
    tail = slice(int(0.95 * num_updates), None)
    final = np.nansum(np.nan_to_num(ret[:, tail]) * cnt[:, tail], 1) / np.maximum(
        cnt[:, tail].sum(1), 1
    )
    steps = num_seeds * num_updates * dqn.env_steps_per_update(config)
    return {"seeds": num_seeds, "compile_s": compile_s, "run_s": run_s,
            "env_steps_per_s": steps / run_s, "final_return": final.tolist()}  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="1,8", help="comma-separated seed counts")
    parser.add_argument("--total_timesteps", type=int, default=500_000)
    parser.add_argument("--head", default="mse", help="value head (rljax.nets.q_heads.HEADS)")
    args = parser.parse_args()
    print(f"machine: {machine.describe()}")
    print(f"CartPole-v1 DQN ({args.head})")
    for s in (int(x) for x in args.seeds.split(",")):
        r = bench(s, args.total_timesteps, args.head)
        rets = ", ".join(f"{x:.0f}" for x in r["final_return"])
        print(
            f"{s} seed(s): compile {r['compile_s']:.1f} s | run {r['run_s']:.1f} s | "
            f"{r['env_steps_per_s']:,.0f} env-steps/s | total {r['compile_s'] + r['run_s']:.1f} s"
            f" | final return per seed: {rets}"
        )


if __name__ == "__main__":
    main()
