"""Benchmarks CartPole DQN: compile time, run time and env-steps/s at 1 and 8 seeds.

    PYTHONPATH=$PWD python scripts/bench_dqn.py [--seeds=1,8] [--layout=auto,default]
    PYTHONPATH=$PWD python scripts/bench_dqn.py --reference_dir=/tmp/purejaxrl [--repeats=2]

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

Reference side by side (never vendored in this repository): with ``--reference_dir`` pointing
at a purejaxrl checkout, each round also runs its ``dqn.py`` (``make_train``, jitted and vmapped
over seeds, as its ``main`` does) in a fresh process of ``--reference_python`` with XLA's
defaults, alternating with the rljax layouts, ``--repeats`` rounds, and prints the best times
and the ratios reference / rljax (> 1: rljax is faster). The reference's final return is the
mean over the last 5% of updates of its per-update mean of the last finished episode's return.
Set-up used for the docs:

    git clone https://github.com/luchris429/purejaxrl /tmp/purejaxrl   # outside this repo
    pip install --no-deps --target /tmp/refpkgs flashbax==0.1.3          # its replay buffer
    # gymnax 1.x: in purejaxrl/dqn.py unpack env.step's six values (obs, state, reward,
    # terminated, truncated, info) with done = terminated | truncated, and jax.tree_map ->
    # jax.tree.map; `wandb` is imported but unused (an empty module on the path will do).
    python scripts/bench_dqn.py --reference_dir=/tmp/purejaxrl --reference_pythonpath=/tmp/refpkgs
"""

import argparse
import json
import os
import subprocess
import sys
import time

from rljax import cli

LAYOUTS = ("auto", "default")
HPARAMS = {"lr": 2.5e-4, "gamma": 0.99, "eps_start": 1.0, "eps_end": 0.05,
           "eps_decay_steps": 250_000, "hl_sigma": 0.75, "reward_noise": 0.0}  # fmt: skip


# Runs in the reference's interpreter with the reference checkout's purejaxrl/ on sys.path.
REFERENCE_DRIVER = r"""
import json, sys, time
import jax, numpy as np
from dqn import make_train
seeds, steps = int(sys.argv[1]), int(sys.argv[2])
config = {"NUM_ENVS": 10, "BUFFER_SIZE": 10000, "BUFFER_BATCH_SIZE": 128, "TOTAL_TIMESTEPS": steps,
          "EPSILON_START": 1.0, "EPSILON_FINISH": 0.05, "EPSILON_ANNEAL_TIME": 25e4,
          "TARGET_UPDATE_INTERVAL": 500, "LR": 2.5e-4, "LEARNING_STARTS": 10000,
          "TRAINING_INTERVAL": 10, "LR_LINEAR_DECAY": False, "GAMMA": 0.99, "TAU": 1.0,
          "ENV_NAME": "CartPole-v1", "SEED": 0, "NUM_SEEDS": seeds, "WANDB_MODE": "disabled"}
rngs = jax.random.split(jax.random.PRNGKey(0), seeds)
t0 = time.perf_counter()
compiled = jax.jit(jax.vmap(make_train(config))).lower(rngs).compile()
compile_s = time.perf_counter() - t0
t0 = time.perf_counter()
out = jax.block_until_ready(compiled(rngs))
run_s = time.perf_counter() - t0
ret = np.asarray(out["metrics"]["returns"], np.float64)  # [S, U]
final = ret[:, int(0.95 * ret.shape[1]):].mean(1)
print(json.dumps({"compile_s": compile_s, "run_s": run_s, "final_return": final.tolist()}))
"""


def bench(num_seeds: int, total_timesteps: int, head: str) -> dict:
    """Compiles and runs the whole training of ``num_seeds`` agents; returns timings.

    The seeds are sharded over all of this process's devices (one device: no sharding).
    """
    import jax
    import numpy as np

    from rljax import envs
    from rljax.agents import dqn
    from rljax.nets import q_heads
    from rljax.train import population

    config = dqn.Config(head=q_heads.make(head))
    num_updates = total_timesteps // dqn.env_steps_per_update(config)
    config = dqn.Config(head=q_heads.make(head), num_updates=num_updates)
    dqn.validate(config)
    env = envs.make("CartPole-v1")
    grid = population.grid_hparams(dqn, [HPARAMS])  # [1] per field, then one per seed
    hparams = jax.tree.map(lambda h: np.repeat(h, num_seeds), grid)
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
    from rljax import prng_kernel, xla_flags

    seeds = int(args.seeds)
    if args.layout == "auto":
        devices, threads = xla_flags.cpu_layout(seeds)
        xla_flags.set_flags(num_cpu_devices=devices, cpu_threads=threads, fast_compile=True)
        layout = f"{devices} CPU device(s), {threads} thread(s)"
    else:
        xla_flags.set_flags()
        layout = "1 CPU device, default threads"
    prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)
    r = bench(seeds, args.total_timesteps, args.head)
    print(json.dumps({**r, "layout": f"{args.layout} [{layout}]"}), flush=True)


def _report(name: str, seeds: int, r: dict) -> None:
    rets = ", ".join(f"{x:.0f}" for x in r["final_return"])
    steps = f" | {r['env_steps_per_s']:,.0f} env-steps/s" if "env_steps_per_s" in r else ""
    print(
        f"{seeds} seed(s), {name}: compile {r['compile_s']:.1f} s | run {r['run_s']:.1f} s"
        f"{steps} | total {r['compile_s'] + r['run_s']:.1f} s | final return per seed: {rets} "
        f"| load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def _run_json(cmd: list[str], env: dict, cwd: str | None = None) -> dict:
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"error: {' '.join(cmd[:3])} ... failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    cli.quiet_logs()
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="1,8", help="comma-separated seed counts")
    parser.add_argument("--layout", default="auto,default", help=f"comma-separated: {LAYOUTS}")
    parser.add_argument("--total_timesteps", type=int, default=500_000)
    parser.add_argument("--head", default="mse", help="value head (rljax.nets.q_heads.HEADS)")
    parser.add_argument("--repeats", type=int, default=1, help="alternating rounds per count")
    parser.add_argument("--reference_dir", default=None, help="a purejaxrl checkout (see above)")
    parser.add_argument("--reference_python", default=sys.executable, help="its interpreter")
    parser.add_argument("--reference_pythonpath", default="", help="extra paths for it")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    layouts = args.layout.split(",")
    bad = [x for x in layouts if x not in LAYOUTS]
    if bad:
        parser.error(f"--layout={bad[0]!r} is unknown; valid: {', '.join(LAYOUTS)}")
    # every flag is checked before the first benchmark starts
    cli.int_list("--seeds", args.seeds)
    cli.check_int("--total_timesteps", args.total_timesteps, low=1)
    cli.check_int("--repeats", args.repeats, low=1)
    from rljax.nets import q_heads  # the parent runs no jax; this only names the heads

    cli.check_choice("--head", args.head, q_heads.HEADS)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])),
    )  # noqa: E501
    probe = "from rljax import machine; print(machine.describe())"
    print("machine:", subprocess.run([sys.executable, "-c", probe], env=env, check=True,
                                     capture_output=True, text=True).stdout.strip())  # fmt: skip
    print(f"CartPole-v1 DQN ({args.head}), {args.total_timesteps:,} env steps per seed")
    if args.reference_dir and not os.path.isfile(
        os.path.join(args.reference_dir, "purejaxrl", "dqn.py")
    ):
        parser.error(f"--reference_dir={args.reference_dir!r} has no purejaxrl/dqn.py")
    ref_src = args.reference_dir and os.path.join(args.reference_dir, "purejaxrl")
    ref_env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PJRT_NPROC")}
    ref_env["PYTHONPATH"] = os.pathsep.join(filter(None, [ref_src, args.reference_pythonpath]))
    for seeds in args.seeds.split(","):
        best = {}
        for _ in range(args.repeats):
            sides = [(f"rljax {layout}", [sys.executable, __file__, "--child", f"--seeds={seeds}",
                      f"--layout={layout}", f"--total_timesteps={args.total_timesteps}",
                      f"--head={args.head}"], env, None) for layout in layouts]  # fmt: skip
            if args.reference_dir:
                cmd = [
                    args.reference_python,
                    "-c",
                    REFERENCE_DRIVER,
                    seeds,
                    str(args.total_timesteps),
                ]
                sides.insert(0, ("reference", cmd, ref_env, ref_src))
            for name, cmd, side_env, cwd in sides:
                r = _run_json(cmd, side_env, cwd)
                _report(r.pop("layout", name) if name != "reference" else name, int(seeds), r)
                r["total_s"] = r["compile_s"] + r["run_s"]
                old = best.get(name)
                best[name] = r if old is None else {
                    **r, **{k: min(r[k], old[k]) for k in ("compile_s", "run_s", "total_s")}
                }  # fmt: skip
        if args.reference_dir:
            ref = best["reference"]
            for name in (n for n in best if n != "reference"):
                o = best[name]
                ratio = {k: ref[k] / o[k] for k in ("compile_s", "run_s", "total_s")}
                print(f"{seeds} seed(s), best of {args.repeats}, reference / {name}: compile "
                      f"{ratio['compile_s']:.2f}x | run {ratio['run_s']:.2f}x"
                      f" | total {ratio['total_s']:.2f}x "
                      f"({ref['total_s']:.1f} s vs {o['total_s']:.1f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    cli.main(lambda: main() and 0)  # one-line errors (--debug: traceback), exit codes
