"""Benchmarks CartPole DQN: compile time, run time and env-steps/s at 1 and 8 seeds.

    PYTHONPATH=$PWD python scripts/bench_dqn.py [--seeds=1,8] [--layout=auto,default]

The setup is the classic single-file JAX DQN (purejaxrl's port of CleanRL's dqn_jax): 500k env
steps, 10 envs, 10k-transition buffer, batch 128, learning starts at 10k steps, one gradient step
every 10 env steps (= every update), target copy every 500 steps, ε 1.0 -> 0.05 over 250k steps,
lr 2.5e-4, a 120x84 ReLU MLP. The whole run is one jitted, vmapped program (one chunk, no host
loop, no checkpoints), as in the reference. The final return is the mean of the episodes that
ended in the last 5% of the run, per seed.

Every (seeds, layout) pair runs in a fresh process, because the CPU device layout is fixed when
jax starts:

* ``auto``: what rljax picks (``rljax.xla_flags.cpu_layout``): one CPU device per core, the
  seeds sharded across them (1 seed: one device on one thread);
* ``default``: what a plain jax script gets, one CPU device with XLA's default thread pool
  (the setting of the reference implementation).
"""

import argparse
import os
import subprocess
import sys
import time

LAYOUTS = ("auto", "default")
HPARAMS = {"lr": 2.5e-4, "gamma": 0.99, "eps_start": 1.0, "eps_end": 0.05,
           "eps_decay_steps": 250_000, "hl_sigma": 0.75, "reward_noise": 0.0}  # fmt: skip


def bench(num_seeds: int, total_timesteps: int, head: str) -> dict:
    """Compiles and runs the whole training of ``num_seeds`` agents; returns timings.

    The seeds are sharded over all of this process's devices (one device: no sharding).
    """
    import jax
    import numpy as np

    from rljax import envs
    from rljax.agents import dqn
    from rljax.train import sweep

    config = dqn.Config(head=head)
    num_updates = total_timesteps // dqn.env_steps_per_update(config)
    config = dqn.Config(head=head, num_updates=num_updates)
    dqn.validate(config)
    env = envs.make("CartPole-v1")
    grid = sweep.stack([HPARAMS], num_seeds)
    hparams = dqn.Hparams(**{k: grid[k] for k in dqn.Hparams._fields})
    keys = jax.random.split(jax.random.PRNGKey(0), num_seeds)
    mesh = jax.make_mesh((jax.device_count(),), ("seeds",), (jax.sharding.AxisType.Auto,))
    seeds = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("seeds"))
    keys, hparams = jax.device_put((keys, hparams), seeds)

    def train(key, hp):  # init and the whole run in one program, as in the reference
        state = dqn.init(config, env, key, hp)
        return dqn.train_chunk(config, env, state, num_updates)[1]

    t0 = time.perf_counter()
    compiled = jax.jit(jax.vmap(train), out_shardings=seeds).lower(keys, hparams).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    metrics = compiled(keys, hparams)
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


def child(args) -> None:
    """Runs one (seeds, layout) measurement in this process and prints one line."""
    from rljax import xla_flags

    seeds = int(args.seeds)
    if args.layout == "auto":
        devices, threads = xla_flags.cpu_layout(seeds)
        xla_flags.set_flags(num_cpu_devices=devices, cpu_threads=threads)
        layout = f"{devices} CPU device(s), {threads or 'default'} thread(s)"
    else:
        xla_flags.set_flags()
        layout = "1 CPU device, default threads"
    r = bench(seeds, args.total_timesteps, args.head)
    rets = ", ".join(f"{x:.0f}" for x in r["final_return"])
    print(
        f"{seeds} seed(s), {args.layout} [{layout}]: compile {r['compile_s']:.1f} s | "
        f"run {r['run_s']:.1f} s | {r['env_steps_per_s']:,.0f} env-steps/s | "
        f"total {r['compile_s'] + r['run_s']:.1f} s | final return per seed: {rets}",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="1,8", help="comma-separated seed counts")
    parser.add_argument("--layout", default="auto,default", help=f"comma-separated: {LAYOUTS}")
    parser.add_argument("--total_timesteps", type=int, default=500_000)
    parser.add_argument("--head", default="mse", help="value head (rljax.nets.q_heads.HEADS)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    layouts = args.layout.split(",")
    bad = [x for x in layouts if x not in LAYOUTS]
    if bad:
        parser.error(f"--layout={bad[0]!r} is unknown; valid: {', '.join(LAYOUTS)}")
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])),
    )  # noqa: E501
    probe = "from rljax import machine; print(machine.describe())"
    print("machine:", subprocess.run([sys.executable, "-c", probe], env=env, check=True,
                                     capture_output=True, text=True).stdout.strip())  # fmt: skip
    print(f"CartPole-v1 DQN ({args.head}), {args.total_timesteps:,} env steps per seed")
    for seeds in args.seeds.split(","):
        for layout in layouts:
            cmd = [sys.executable, __file__, "--child", f"--seeds={seeds}", f"--layout={layout}",
                   f"--total_timesteps={args.total_timesteps}", f"--head={args.head}"]  # fmt: skip
            subprocess.run(cmd, env=env, check=True)


if __name__ == "__main__":
    main()
