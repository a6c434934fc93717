"""Benchmark: CartPole PPO compile/run time at 1/8/64 seeds, side by side with a reference.

    python scripts/bench_ppo.py [--main] [--seeds=1,8,64] [--repeats=2] [--envs=1,256,4096]
    python scripts/bench_ppo.py --seeds=1,8 --reference_dir=/tmp/purejaxrl \\
        --reference_python=/path/to/python

``--main`` first times the README's main job end to end, as a user runs it: a fresh
``python experiments/train.py --config=configs/ppo.py:CartPole-v1`` process (imports, compile,
8 seeds x 500k steps, checkpoints, metrics and plots), wall-clock from process start to exit.

The seeds table uses the classic single-file JAX PPO setup: 4 envs x 128 steps, 4 epochs,
4 minibatches, 64x64 tanh MLP, lr 2.5e-4 annealed, 500k env steps per seed; init and the whole
run are one jitted, vmapped program, as in the reference. Every measurement is a fresh process
(so no side inherits the other's compilation cache or thread pool). rljax uses its own CPU
layout (``rljax.xla_flags.cpu_layout``, what ``experiments/train.py`` picks by default): one
device on a 1-thread XLA pool for a single agent; otherwise one device per core, each with its
share of the seeds, on a pool of one thread more than the devices. The reference runs with
XLA's defaults (one device, one thread per core). "final" is the mean return of the episodes
that ended in the last 5% of updates.

Reference side by side (never vendored in this repository). With ``--reference_dir`` the same
table also runs purejaxrl's ``ppo.py`` (``make_train``, jitted and vmapped over seeds, as its
README does) in that checkout, alternating reference and rljax ``--repeats`` times per seed
count, and prints each side's best compile, run and total and the ratios reference / rljax
(> 1: rljax is faster). Set-up used for the README figures:

    git clone https://github.com/luchris429/purejaxrl /tmp/purejaxrl   # outside this repo
    # gymnax 1.x: env.step returns (obs, state, reward, terminated, truncated, info); in
    # purejaxrl/wrappers.py make FlattenObservationWrapper.step unpack six values and return
    # done = terminated | truncated, and drop the brax / navix imports (unused here);
    # ppo.py needs `distrax` (pip install distrax, or a 10-line Categorical stand-in with
    # sample / log_prob / entropy on the reference's PYTHONPATH).
    python scripts/bench_ppo.py --reference_dir=/tmp/purejaxrl

``--reference_python`` picks the reference's interpreter (default: this one); extra import
paths for it go in ``--reference_pythonpath``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from rljax import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLASSIC = {"num_envs": 4, "num_steps": 128, "num_epochs": 4, "num_minibatches": 4}
HPARAMS = {"lr": 2.5e-4, "clip_eps": 0.2, "ent_coef": 0.01, "vf_coef": 0.5, "gamma": 0.99,
           "gae_lambda": 0.95}  # fmt: skip

# Runs in the reference's interpreter with the reference checkout's purejaxrl/ on sys.path.
REFERENCE_DRIVER = r"""
import json, sys, time
import jax, numpy as np
from ppo import make_train
seeds, steps = int(sys.argv[1]), int(sys.argv[2])
config = {"LR": 2.5e-4, "NUM_ENVS": 4, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": steps,
          "UPDATE_EPOCHS": 4, "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95,
          "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5,
          "ACTIVATION": "tanh", "ENV_NAME": "CartPole-v1", "ANNEAL_LR": True, "DEBUG": False}
rngs = jax.random.split(jax.random.PRNGKey(0), seeds)
t0 = time.perf_counter()
compiled = jax.jit(jax.vmap(make_train(config))).lower(rngs).compile()
compile_s = time.perf_counter() - t0
t0 = time.perf_counter()
out = jax.block_until_ready(compiled(rngs))
run_s = time.perf_counter() - t0
m = out["metrics"]
ret = np.asarray(m["returned_episode_returns"], np.float64)  # [S, U, T, B]
done = np.asarray(m["returned_episode"], np.float64)
tail = slice(int(0.95 * ret.shape[1]), None)
final = (ret[:, tail] * done[:, tail]).sum((1, 2, 3)) / np.maximum(done[:, tail].sum((1, 2, 3)), 1)
print(json.dumps({"compile_s": compile_s, "run_s": run_s, "final": final.tolist()}))
"""


def child_ppo(seeds: int, steps: int) -> dict:
    """Compiles and runs the classic setup for ``seeds`` agents in this (fresh) process."""
    from rljax import prng_kernel, xla_flags

    devices, threads = xla_flags.cpu_layout(seeds)
    xla_flags.set_flags(
        num_cpu_devices=devices if devices > 1 else None, cpu_threads=threads, fast_compile=True
    )
    prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)

    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    from rljax import envs
    from rljax.agents import ppo

    probe = ppo.Config(**CLASSIC)
    updates = steps // ppo.env_steps_per_update(probe)
    config = ppo.Config(**CLASSIC, num_updates=updates)
    ppo.validate(config)
    env = envs.make("CartPole-v1")
    hparams = ppo.Hparams(**{k: np.full(seeds, v, np.float32) for k, v in HPARAMS.items()})
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)

    def train(key, hp):  # init and the whole run in one program, as in the reference
        state = ppo.init(config, env, key, hp)
        return ppo.train_chunk(config, env, state, updates)[1]

    mesh = jax.make_mesh((devices,), ("seeds",), axis_types=(jax.sharding.AxisType.Auto,))
    seeds_axis = NamedSharding(mesh, PartitionSpec("seeds"))  # each device its share of seeds
    keys, hparams = jax.device_put((keys, hparams), seeds_axis)
    t0 = time.perf_counter()
    compiled = jax.jit(jax.vmap(train), in_shardings=seeds_axis, out_shardings=seeds_axis)
    compiled = compiled.lower(keys, hparams).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    metrics = jax.block_until_ready(compiled(keys, hparams))
    run_s = time.perf_counter() - t0
    ret = np.asarray(metrics["episode/return"], np.float64)  # [S, U]: mean over finished
    cnt = np.asarray(metrics["episode/count"], np.float64)
    tail = slice(int(0.95 * updates), None)
    final = (np.nan_to_num(ret[:, tail]) * cnt[:, tail]).sum(1) / np.maximum(cnt[:, tail].sum(1), 1)
    return {"compile_s": compile_s, "run_s": run_s, "final": final.tolist()}


def _run_json(cmd: list[str], env: dict, cwd: str | None = None) -> dict:
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"error: {' '.join(cmd[:3])} ... failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ours(seeds: int, steps: int) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
    }
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        f"--seeds={seeds}",
        f"--steps={steps}",
    ]
    return _run_json(cmd, env)


def reference(args, seeds: int, steps: int) -> dict:
    src = os.path.join(args.reference_dir, "purejaxrl")
    path = os.pathsep.join(filter(None, [src, args.reference_pythonpath]))
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PJRT_NPROC")}
    env["PYTHONPATH"] = path  # the reference as it ships: XLA's defaults, nothing of rljax
    cmd = [args.reference_python, "-c", REFERENCE_DRIVER, str(seeds), str(steps)]
    return _run_json(cmd, env, cwd=src)


def bench_main_job() -> tuple[float, str]:
    """Wall-clock of the main job as a fresh process, and its one-line summary."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory() as workdir:
        cmd = [
            sys.executable,
            os.path.join(ROOT, "experiments", "train.py"),
            "--config=" + os.path.join(ROOT, "configs", "ppo.py") + ":CartPole-v1",
            f"--workdir={workdir}",
            "--config.progress=False",
        ]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        wall = time.perf_counter() - t0
    return wall, next(line for line in out.splitlines() if "done |" in line)


def _final(r: dict) -> str:
    f = r["final"]
    return f"{sum(f) / len(f):.1f} (min {min(f):.0f})"


def seeds_table(args) -> None:
    with_ref = args.reference_dir is not None
    print("PPO CartPole-v1, 4 envs x 128 steps, 4 epochs x 4 minibatches, 64x64 tanh, "
          f"{args.steps:,} steps per seed; best of {args.repeats}, sides alternating")  # fmt: skip
    for s in (int(v) for v in args.seeds.split(",")):
        best = {}
        for _ in range(args.repeats):
            sides = [("rljax", lambda s=s: ours(s, args.steps))]
            if with_ref:
                sides.insert(0, ("reference", lambda s=s: reference(args, s, args.steps)))
            for name, fn in sides:
                r = fn()
                r["total_s"] = r["compile_s"] + r["run_s"]
                old = best.get(name)
                best[name] = r if old is None else {
                    **r, **{k: min(r[k], old[k]) for k in ("compile_s", "run_s", "total_s")}
                }  # fmt: skip
                print(f"  {s:>3} seeds {name:>9}: compile {r['compile_s']:6.2f} s | run "
                      f"{r['run_s']:7.2f} s | final {_final(r)} | load {os.getloadavg()[0]:.1f}",
                      flush=True)  # fmt: skip
        o = best["rljax"]
        sps = s * (args.steps // 512) * 512 / o["run_s"]
        line = (f"{s:>3} seeds | rljax compile {o['compile_s']:.2f} s, run {o['run_s']:.2f} s, "
                f"total {o['total_s']:.2f} s ({sps:,.0f} env-steps/s)")  # fmt: skip
        if with_ref:
            r = best["reference"]
            line += (f" | reference compile {r['compile_s']:.2f} s, run {r['run_s']:.2f} s, "
                     f"total {r['total_s']:.2f} s | reference/rljax: compile "
                     f"{r['compile_s'] / o['compile_s']:.2f}x, run {r['run_s'] / o['run_s']:.2f}x, "
                     f"total {r['total_s'] / o['total_s']:.2f}x")  # fmt: skip
        print(line, flush=True)


def env_table(args) -> None:
    from rljax import prng_kernel, xla_flags

    xla_flags.set_flags()
    prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)
    import jax

    from rljax import envs

    def random_steps(step_fn, env, num_envs, num_steps):
        def run(key):
            state = envs.reset(env, key, num_envs)

            def body(carry, k):
                a_key, s_key = jax.random.split(k)
                action = jax.random.randint(a_key, (num_envs,), 0, env.num_actions)
                carry, reward = step_fn(env, s_key, carry, action)
                return carry, reward.sum()

            return jax.lax.scan(body, state, jax.random.split(key, num_steps))[1].sum()

        return jax.jit(run)

    def adapter(env, key, state, action):
        state, res = envs.step(env, key, state, action)
        return state, res.reward

    def bare(env, key, state, action):
        keys = jax.random.split(key, action.shape[0])
        obs, env_state, reward, _, _, _ = jax.vmap(env.env.step, in_axes=(0, 0, 0, None))(
            keys, state.env_state, action, env.params
        )
        return state._replace(env_state=env_state, obs=obs), reward

    env = envs.make("CartPole-v1")
    print("random-action env stepping (CartPole-v1), best of 3, interleaved")
    print(f"{'envs':>6} {'bare gymnax/s':>14} {'rljax adapter/s':>16} {'adapter/bare':>13}")
    for n in (int(v) for v in args.envs.split(",")):
        num_steps = max(1, min(args.env_steps, max(n * 2000, 200_000)) // n)
        fns = {
            k: random_steps(f, env, n, num_steps) for k, f in (("adapter", adapter), ("bare", bare))
        }
        best = {}
        for fn in fns.values():
            fn(jax.random.PRNGKey(0)).block_until_ready()
        for r in range(3):  # interleave to share the machine's noise
            for name, fn in fns.items():
                t0 = time.perf_counter()
                fn(jax.random.PRNGKey(r + 1)).block_until_ready()
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
        steps = n * num_steps
        print(f"{n:>6} {steps / best['bare']:>14,.0f} {steps / best['adapter']:>16,.0f} "
              f"{best['bare'] / best['adapter']:>13.2f}")  # fmt: skip


def main():
    cli.quiet_logs()
    parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,8,64", help="comma-separated seed counts")
    parser.add_argument("--repeats", type=int, default=2, help="alternating rounds per count")
    parser.add_argument("--envs", default="", help="comma-separated env counts (env stepping)")
    parser.add_argument("--steps", type=int, default=500_000, help="env steps per seed")
    parser.add_argument(
        "--env-steps", type=int, default=2_000_000, help="random steps per env test"
    )
    parser.add_argument("--main", action="store_true", help="time the main job first")
    parser.add_argument("--reference_dir", default=None, help="a purejaxrl checkout (see above)")
    parser.add_argument("--reference_python", default=sys.executable, help="its interpreter")
    parser.add_argument("--reference_pythonpath", default="", help="extra paths for it")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    # every flag is checked before the first benchmark starts
    for flag, text in (("--seeds", args.seeds), ("--envs", args.envs)):
        if text:
            cli.int_list(flag, text)
    for name in ("repeats", "steps", "env_steps"):
        cli.check_int(f"--{name.replace('_', '-')}", getattr(args, name), low=1)
    if args.child:
        print(json.dumps(child_ppo(int(args.seeds), args.steps)))
        return
    if args.reference_dir and not os.path.isfile(
        os.path.join(args.reference_dir, "purejaxrl", "ppo.py")
    ):
        parser.error(f"--reference_dir={args.reference_dir!r} has no purejaxrl/ppo.py")
    probe = "from rljax import machine; print(machine.describe())"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
    }
    print("machine:", subprocess.run([sys.executable, "-c", probe], env=env, check=True,
                                     capture_output=True, text=True).stdout.strip())  # fmt: skip
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    if args.main:
        wall, summary = bench_main_job()
        print(f"main job (configs/ppo.py:CartPole-v1), process wall-clock {wall:.1f} s")
        print(f"  {summary}")
    if args.seeds:
        seeds_table(args)
    if args.envs:
        env_table(args)


if __name__ == "__main__":
    cli.main(lambda: main() and 0)  # one-line errors (--debug: traceback), exit codes
