"""Benchmark: rljax beside rejax on rejax's own settings: compile and run time, final return.

    python scripts/bench_rejax.py --rejax_python=.venvs/rejax/bin/python
    python scripts/bench_rejax.py --rejax_python=... --algos=ppo,dqn --seeds=1,16 --repeats=2
    python scripts/bench_rejax.py --rejax_python=... --rows=sac:1,sac:16,pqn:16:131072

For each algorithm of ``ALGOS`` and each seed count, rejax and rljax train the same
environment for the same env steps with rejax's own hyperparameters (its
``configs/gymnax/<env>.yaml``), each as one jitted program of init and the whole run (vmapped
over the seeds; at one seed rejax runs both vmapped and as its plain ``jit(algo.train)(key)``,
its best kept, and rljax as its trainer runs a population of one, unbatched:
``rljax.parallel.learner_axis.map_learners``), each in a fresh process, alternating rejax and
rljax ``--repeats`` times; the table gives each side's best compile, run and total and the
ratios rejax / rljax (> 1: rljax is faster).

rejax runs in its own interpreter (``--rejax_python``): its release pins jax loosely but needs
the gymnax 0.0.x step API (five outputs). Set-up used for docs/learners_recurrent.md:

    python -m venv .venvs/rejax
    .venvs/rejax/bin/pip install rejax==0.1.3 jax==0.5.3 jaxlib==0.5.3 gymnax==0.0.9 \\
        flax==0.10.4 optax==0.2.4 chex==0.1.89 distrax==0.1.5 orbax-checkpoint==0.11.5

rejax runs with XLA's defaults (one device, one thread per core); rljax with its own CPU layout
(``rljax.xla_flags.cpu_layout``, as ``experiments/train.py`` picks by default).

"final": rljax, the mean return of the training episodes that ended in the last 5% of updates;
rejax, the mean return of its own evaluation (128 episodes of ``make_act``'s policy) at the end
of the run. rejax evaluates once, at the end (``eval_freq`` = the budget, no initial
evaluation), so its run time carries one evaluation and no more.

The table of algorithms (``ALGOS``: PPO, DQN and PQN on CartPole-v1, SAC and TD3 on Pendulum-v1)
maps each to rejax's config and to an rljax config file plus dotted overrides that set rljax's
fields to rejax's values. Differences that remain are listed per entry (``differences``).
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys

from rljax import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# rejax's interpreter, as used for docs/learners_recurrent.md (the module docstring)
REJAX_VENV = "python -m venv .venvs/rejax"
REJAX_INSTALL = (
    "pip install rejax==0.1.3 jax==0.5.3 jaxlib==0.5.3 gymnax==0.0.9 flax==0.10.4 optax==0.2.4 "
    "chex==0.1.89 distrax==0.1.5 orbax-checkpoint==0.11.5"
)

# algorithm -> rejax's settings (configs/gymnax/cartpole.yaml of rejax) and rljax's equivalent.
ALGOS = {
    "ppo": {
        "rejax": (
            "ppo",
            {
                "env": "CartPole-v1",
                "agent_kwargs": {"activation": "tanh"},
                "num_envs": 5,
                "num_steps": 100,
                "num_epochs": 5,
                "num_minibatches": 5,
                "learning_rate": 0.00075,
                "max_grad_norm": 0.5,
                "total_timesteps": 100_000,
                "gamma": 0.99,
                "gae_lambda": 0.95,
                "clip_eps": 0.2,
                "ent_coef": 0.01,
                "vf_coef": 0.5,
            },
        ),
        "rljax": (
            "configs/ppo.py:CartPole-v1",
            {
                "total_timesteps": 100_000,
                "ppo.num_envs": 5,
                "ppo.num_steps": 100,
                "ppo.num_epochs": 5,
                "ppo.num_minibatches": 5,
                "ppo.hidden": (64, 64),
                "ppo.activation": "tanh",
                "ppo.max_grad_norm": 0.5,
                "ppo.anneal_lr": False,
                "hparams.lr": 0.00075,
                "hparams.gamma": 0.99,
                "hparams.gae_lambda": 0.95,
                "hparams.clip_eps": 0.2,
                "hparams.ent_coef": 0.01,
                "hparams.vf_coef": 0.5,
            },
        ),
        "differences": "rejax clips gradients per element (optax.clip) and steps actor and "
        "critic with two Adam optimizers; rljax clips the global norm, one Adam",
    },
    "dqn": {
        "rejax": (
            "dqn",
            {
                "env": "CartPole-v1",
                "learner": "DuelingQNetwork",
                "agent_kwargs": {"activation": "swish"},
                "num_envs": 10,
                "buffer_size": 50_000,
                "fill_buffer": 5_000,
                "batch_size": 100,
                "max_grad_norm": 10,
                "learning_rate": 0.001,
                "num_epochs": 5,
                "total_timesteps": 100_000,
                "polyak": 0.98,
                "eps_start": 1,
                "eps_end": 0.05,
                "exploration_fraction": 0.5,
                "gamma": 0.99,
                "ddqn": True,
                "normalize_observations": False,
            },
        ),
        "rljax": (
            "configs/dqn.py:CartPole-v1",
            {
                "total_timesteps": 100_000,
                "dqn.num_envs": 10,
                "dqn.rollout_steps": 1,
                "dqn.grad_steps": 5,
                "dqn.buffer_size": 50_000,
                "dqn.batch_size": 100,
                "dqn.learning_starts": 5_000,
                "dqn.target_update_every": 10,
                "dqn.tau": 0.02,
                "dqn.double": True,
                "dqn.hidden": (64, 64),
                "dqn.activation": "swish",
                "dqn.max_grad_norm": 10.0,
                "dqn.head": "mse",
                "hparams.lr": 0.001,
                "hparams.gamma": 0.99,
                "hparams.eps_start": 1.0,
                "hparams.eps_end": 0.05,
                "hparams.eps_decay_steps": 50_000,
            },
        ),
        "differences": "rejax: dueling head, per-element gradient clip; rljax: plain MLP head, "
        "global-norm clip",
    },
    "pqn": {
        "rejax": (
            "pqn",
            {
                "env": "CartPole-v1",
                "num_envs": 16,
                "num_steps": 128,
                "num_minibatches": 16,
                "max_grad_norm": 10,
                "learning_rate": 0.0003,
                "num_epochs": 5,
                "total_timesteps": 524_288,
                "eps_start": 1,
                "eps_end": 0.05,
                "exploration_fraction": 0.5,
                "gamma": 0.99,
                "td_lambda": 0.9,
                "normalize_observations": False,
            },
        ),
        "rljax": (
            "configs/pqn.py:CartPole-v1",
            {
                "total_timesteps": 524_288,
                "chunk_updates": 0,
                "pqn.num_envs": 16,
                "pqn.rollout_steps": 128,
                "pqn.num_epochs": 5,
                "pqn.num_minibatches": 16,
                "pqn.hidden": (64, 64),
                "pqn.activation": "relu",
                "pqn.norm": "layer_norm",
                "pqn.anneal_lr": False,
                "hparams.lr": 0.0003,
                "hparams.gamma": 0.99,
                "hparams.lambda_": 0.9,
                "hparams.eps_start": 1.0,
                "hparams.eps_end": 0.05,
                "hparams.eps_decay_steps": 262_144,
                "hparams.max_grad_norm": 10.0,
                "hparams.reward_scale": 1.0,
            },
        ),
        "differences": "rejax clips gradients per element (optax.clip); rljax clips the "
        "global norm",
    },
    "sac": {
        "rejax": (
            "sac",
            {
                "env": "Pendulum-v1",
                "agent_kwargs": {"activation": "swish"},
                "num_envs": 1,
                "buffer_size": 10_000,
                "fill_buffer": 256,
                "batch_size": 256,
                "learning_rate": 0.01,
                "num_epochs": 1,
                "total_timesteps": 10_000,
                "gamma": 0.99,
                "polyak": 0.98,
                "target_entropy_ratio": None,
                "normalize_observations": True,
            },
        ),
        "rljax": (
            "configs/sac.py:Pendulum-v1",
            {
                "total_timesteps": 10_000,
                "chunk_updates": 0,
                "sac.num_envs": 1,
                "sac.rollout_steps": 1,
                "sac.grad_steps": 1,
                "sac.buffer_size": 10_000,
                "sac.batch_size": 256,
                "sac.learning_starts": 256,
                "sac.hidden": (64, 64),
                "sac.activation": "swish",
                "hparams.lr_actor": 0.01,
                "hparams.lr_critic": 0.01,
                "hparams.lr_alpha": 0.01,
                "hparams.gamma": 0.99,
                "hparams.tau": 0.02,
                "hparams.init_alpha": 1.0,
                "hparams.target_entropy": -1.0,
            },
        ),
        "differences": "rejax: observations normalized by running statistics; rljax: raw "
        "observations",
    },
    "td3": {
        "rejax": (
            "td3",
            {
                "env": "Pendulum-v1",
                "actor_kwargs": {"activation": "swish"},
                "critic_kwargs": {"activation": "swish"},
                "num_envs": 1,
                "buffer_size": 10_000,
                "fill_buffer": 1000,
                "batch_size": 100,
                "learning_rate": 0.001,
                "num_epochs": 1,
                "total_timesteps": 10_000,
                "gamma": 0.99,
                "polyak": 0.95,
                "max_grad_norm": 100,
                "exploration_noise": 0.3,
                "target_noise": 0.2,
                "target_noise_clip": 0.5,
                "policy_delay": 2,
                "normalize_observations": True,
            },
        ),
        "rljax": (
            "configs/td3.py:Pendulum-v1",
            {
                "total_timesteps": 10_000,
                "chunk_updates": 0,
                "td3.num_envs": 1,
                "td3.rollout_steps": 1,
                "td3.grad_steps": 1,
                "td3.buffer_size": 10_000,
                "td3.batch_size": 100,
                "td3.learning_starts": 1000,
                "td3.policy_delay": 2,
                "td3.hidden": (64, 64),
                "td3.activation": "swish",
                "hparams.lr_actor": 0.001,
                "hparams.lr_critic": 0.001,
                "hparams.gamma": 0.99,
                "hparams.tau": 0.05,
                "hparams.explore_noise": 0.3,
                "hparams.target_noise": 0.2,
                "hparams.noise_clip": 0.5,
            },
        ),
        "differences": "rejax: observations normalized by running statistics, per-element "
        "gradient clip at 100; rljax: raw observations, no clip",
    },
}

# Runs in rejax's interpreter: argv = algorithm name, JSON config, seeds.
REJAX_DRIVER = r"""
import json, sys, time
import jax, numpy as np
import rejax
name, config, seeds, call = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
config.update(eval_freq=config["total_timesteps"], skip_initial_evaluation=True)
algo = rejax.get_algo(name).create(**config)
keys = jax.random.split(jax.random.PRNGKey(0), seeds)
train = jax.vmap(algo.train)
if call == "plain":  # one seed: rejax's own single-run call, jit(algo.train)(key)
    keys, train = keys[0], lambda key: jax.tree.map(lambda x: x[None], algo.train(key))
t0 = time.perf_counter()
compiled = jax.jit(train).lower(keys).compile()
compile_s = time.perf_counter() - t0
t0 = time.perf_counter()
_, (lengths, returns) = jax.block_until_ready(compiled(keys))
run_s = time.perf_counter() - t0
final = np.asarray(returns, np.float64)[:, -1].mean(-1)  # [S]: last evaluation, 128 episodes
print(json.dumps({"compile_s": compile_s, "run_s": run_s, "final": final.tolist()}))
"""


def child_rljax(algo: str, seeds: int, steps: int) -> dict:
    """Compiles and runs ``ALGOS[algo]``'s rljax side for ``seeds`` agents in this process."""
    from rljax import xla_flags

    devices, threads = xla_flags.cpu_layout(seeds)
    xla_flags.set_flags(
        num_cpu_devices=devices if devices > 1 else None, cpu_threads=threads, fast_compile=True
    )
    import dataclasses
    import time

    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    sys.path.insert(0, os.path.join(ROOT, "experiments"))
    import train as train_entry

    from rljax import cli, envs
    from rljax.parallel import learner_axis
    from rljax.train import experiment, population

    path, arg = ALGOS[algo]["rljax"][0].split(":")
    spec = importlib.util.spec_from_file_location("config_file", os.path.join(ROOT, path))
    config_file = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(config_file)
    config = cli.apply_overrides(config_file.get_config(arg), dict(ALGOS[algo]["rljax"][1]))
    config.num_seeds = seeds
    config.total_timesteps = steps or config.total_timesteps
    fraction = ALGOS[algo]["rejax"][1].get("exploration_fraction")
    if fraction is not None:  # rejax decays ε over a fraction of the run, whatever its length
        config.hparams.eps_decay_steps = round(fraction * config.total_timesteps)
    module, learner_config, run = train_entry.to_dataclasses(config, "/tmp/unused", 1)
    points = experiment.validate_run(run, module, learner_config)
    updates = experiment.num_updates(run, module, learner_config)
    learner_config = dataclasses.replace(learner_config, num_updates=updates)
    env = envs.make(run.env_name)
    grid = population.grid_hparams(module, points)  # [G] per field, then grid-major [G * S]
    hparams = jax.tree.map(lambda h: np.repeat(h, seeds), grid)
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)

    def train(inputs):  # init and the whole run in one program, as rejax's train
        state = module.init(learner_config, env, *inputs)
        return module.train_chunk(learner_config, env, state, updates)[1]

    # Mapped over the seeds as the trainer maps its learners (one seed: unbatched).
    population = lambda k, h: learner_axis.map_learners(train, (k, h))  # noqa: E731
    mesh = jax.make_mesh((devices,), ("seeds",), axis_types=(jax.sharding.AxisType.Auto,))
    seeds_axis = NamedSharding(mesh, PartitionSpec("seeds"))
    keys, hparams = jax.device_put((keys, hparams), seeds_axis)
    t0 = time.perf_counter()
    compiled = jax.jit(population, in_shardings=seeds_axis, out_shardings=seeds_axis)
    compiled = compiled.lower(keys, hparams).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    metrics = jax.block_until_ready(compiled(keys, hparams))
    run_s = time.perf_counter() - t0
    ret = np.asarray(metrics["episode/return"], np.float64)  # [S, U]
    cnt = np.asarray(metrics["episode/count"], np.float64)
    tail = slice(int(0.95 * updates), None)
    final = (np.nan_to_num(ret[:, tail]) * cnt[:, tail]).sum(1) / np.maximum(cnt[:, tail].sum(1), 1)
    return {"compile_s": compile_s, "run_s": run_s, "final": final.tolist()}


def check_rejax_python(python: str) -> str:
    """`python` if it is an interpreter that imports rejax and gymnax; else a one-line
    `cli.ConfigError` saying what is missing and how to get it (nothing has run yet)."""
    how = f"create it with `{REJAX_VENV} && .venvs/rejax/bin/{REJAX_INSTALL}`"
    found = shutil.which(python)
    if found is None:
        what = "is not an executable file" if os.path.exists(python) else "does not exist"
        raise cli.ConfigError(f"--rejax_python={python!r} {what}; {how}")
    probe = [found, "-c", "import rejax, gymnax"]
    try:
        out = subprocess.run(probe, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise cli.ConfigError(f"--rejax_python={python!r} does not run ({e}); {how}") from None
    if out.returncode:
        last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        raise cli.ConfigError(
            f"--rejax_python={python!r} cannot import rejax and gymnax ({last}); install them "
            f"with `{python} -m {REJAX_INSTALL}` (or a separate interpreter: {REJAX_VENV})"
        )
    return found


def _run_json(cmd: list[str], env: dict) -> dict:
    """The JSON last line of a side's run; a run that fails is one line (its stderr's last line;
    `--debug`: its whole stderr), exit 1."""
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    except OSError as e:  # the interpreter went away since the check
        cli.fail(f"{cmd[0]} does not run: {e}", cli.EXIT_FAILED)
    if out.returncode:
        last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        if cli.debug_requested():
            print(out.stderr, file=sys.stderr)
        cli.fail(
            f"{' '.join(cmd[:2])} ... failed (exit {out.returncode}): {last} (rerun with "
            f"{cli.DEBUG_FLAG} for its stderr)",
            cli.EXIT_FAILED,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def ours(algo: str, seeds: int, steps: int) -> dict:
    path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        f"--child={algo}",
        f"--seeds={seeds}",
        f"--steps={steps}",
    ]
    return _run_json(cmd, env)


def theirs(python: str, algo: str, seeds: int, steps: int, call: str = "vmap") -> dict:
    """rejax's run in its interpreter; ``call``: ``vmap`` (over the seeds) or, for one seed,
    ``plain`` (``jit(algo.train)(key)``)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PJRT_NPROC", "PYTHONPATH")
    }
    name, config = ALGOS[algo]["rejax"]
    config = {**config, "total_timesteps": steps or config["total_timesteps"]}
    cmd = [python, "-c", REJAX_DRIVER, name, json.dumps(config), str(seeds), call]
    return _run_json(cmd, env)


def _final(r: dict) -> str:
    f = r["final"]
    return f"{sum(f) / len(f):.1f} (min {min(f):.0f})"


def plan(args) -> list[tuple[str, int, int]]:
    """``(algorithm, seeds, env steps per seed or 0 for rejax's)`` in the order they run.

    ``--rows`` (``algo:seeds[:steps]``, comma-separated) lists them one by one; otherwise every
    algorithm of ``--algos`` at every count of ``--seeds``, with ``--steps``.
    """
    if args.rows:
        out = []
        for item in args.rows.split(","):
            parts = item.split(":")
            ok = 2 <= len(parts) <= 3 and parts[0] in ALGOS and all(p.isdigit() for p in parts[1:])
            if not ok or int(parts[1]) < 1:
                raise ValueError(
                    f"--rows: {item!r} is invalid; allowed: algo:seeds[:steps] with algo one of "
                    f"{', '.join(ALGOS)}, seeds >= 1, steps >= 0"
                )
            out.append((parts[0], int(parts[1]), int(parts[2]) if len(parts) == 3 else 0))
        return out
    seeds = [int(v) for v in args.seeds.split(",")]
    return [(algo, s, args.steps) for algo in args.algos.split(",") for s in seeds]


def table(args) -> list[dict]:
    rows = []
    for algo, s, steps_arg in plan(args):
        steps = steps_arg or ALGOS[algo]["rejax"][1]["total_timesteps"]
        print(f"{algo} {ALGOS[algo]['rejax'][1]['env']}, {s} seeds, {steps:,} steps per seed, "
              f"rejax's settings; differences: {ALGOS[algo]['differences']}",
              flush=True)  # fmt: skip
        best = {}
        # One seed: rejax both ways (vmapped and its plain single-run call), its best kept.
        sides = ("rejax", "rljax") if s > 1 else ("rejax", "rejax plain", "rljax")
        for _ in range(args.repeats):
            for label in sides:
                side = label.split()[0]
                if side == "rejax":
                    call = label.split()[-1] if " " in label else "vmap"
                    r = theirs(args.rejax_python, algo, s, steps_arg, call)
                else:
                    r = ours(algo, s, steps_arg)
                r["total_s"] = r["compile_s"] + r["run_s"]
                old = best.get(side)
                best[side] = r if old is None else {
                    **r, **{k: min(r[k], old[k]) for k in ("compile_s", "run_s", "total_s")}
                }  # fmt: skip
                print(f"  {s:>3} seeds {label:>11}: compile {r['compile_s']:6.2f} s | run "
                      f"{r['run_s']:7.2f} s | final {_final(r)} | load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
        o, t = best["rljax"], best["rejax"]
        row = {"algo": algo, "seeds": s, "steps": steps, "rljax": o, "rejax": t}
        for k in ("compile", "run", "total"):
            row[f"ratio_{k}"] = t[f"{k}_s"] / o[f"{k}_s"]
        rows.append(row)
        if args.json:  # after every row: a run stopped early keeps what it measured
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        print(f"{algo} {s:>3} seeds | rejax/rljax: compile {row['ratio_compile']:.2f}x, run "
              f"{row['ratio_run']:.2f}x, total {row['ratio_total']:.2f}x | final rejax "
              f"{_final(t)}, rljax {_final(o)}", flush=True)  # fmt: skip
    return rows


def main():
    cli.quiet_logs()
    parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default="ppo,dqn", help=f"comma-separated: {', '.join(ALGOS)}")
    parser.add_argument("--seeds", default="1,16", help="comma-separated seed counts")
    parser.add_argument("--repeats", type=int, default=2, help="alternating rounds per count")
    parser.add_argument("--rejax_python", default=sys.executable, help="rejax's interpreter")
    parser.add_argument("--steps", type=int, default=0, help="env steps per seed (0: rejax's)")
    parser.add_argument("--rows", default="", help="algo:seeds[:steps],... (overrides the above)")
    parser.add_argument("--json", default="", help="also write the rows to this file")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child_rljax(args.child, int(args.seeds), args.steps)))
        return
    for algo in args.algos.split(","):
        if algo not in ALGOS:
            parser.error(f"--algos: {algo!r} is unknown; valid: {', '.join(ALGOS)}")
    for s in args.seeds.split(","):
        if not s.isdigit() or int(s) < 1:
            parser.error(f"--seeds: {s!r} is invalid; allowed: integers >= 1")
    if args.steps < 0:
        parser.error(f"--steps={args.steps} is invalid; allowed: an integer >= 0")
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats} is invalid; allowed: an integer >= 1")
    try:
        plan(args)
    except ValueError as e:
        parser.error(str(e))
    args.rejax_python = check_rejax_python(args.rejax_python)
    probe = (  # the machine, and whether rljax's draws go through its Threefry kernel
        "from rljax import machine, prng_kernel; "
        "print(machine.describe(), '| rljax threefry kernel:', prng_kernel.install())"
    )
    env = {**os.environ, "PYTHONPATH": ROOT}
    print("machine:", subprocess.run([sys.executable, "-c", probe], env=env, check=True,
                                     capture_output=True, text=True).stdout.strip())  # fmt: skip
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    table(args)


if __name__ == "__main__":
    cli.main(lambda: main() and 0)
