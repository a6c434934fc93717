"""Stop Regressing ablation: MSE vs Huber vs two-hot vs HL-Gauss vs C51 value losses in DQN.

    PYTHONPATH=$PWD python experiments/ablate_stop_regressing.py            # --quick (default)
    PYTHONPATH=$PWD python experiments/ablate_stop_regressing.py --full --seeds=8
    PYTHONPATH=$PWD python experiments/ablate_stop_regressing.py --widths=64,256,1024 \
        --reward_noise=0,1

Farebrother et al. 2024 ("Stop Regressing: Training Value Functions via Classification") claim
that cross-entropy on a categorical value (two-hot, HL-Gauss) matches or beats MSE regression,
with the gap growing with network size and target noise. Arms: MSE, Huber, two-hot CE, HL-Gauss
with σ/bin width ∈ {0.25, 0.75, 2} (one vmapped program), C51. Seeds (and the three σ) train
together under one ``vmap``. Writes results.md, results.json and curves.png into --out.
Quick mode: 2 seeds, 100k env steps on CartPole-v1, Acrobot-v1 and Breakout-MinAtar.
"""

from rljax import xla_flags

xla_flags.set_flags()

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from configs import dqn as dqn_configs  # noqa: E402
from rljax import envs  # noqa: E402
from rljax.agents import dqn, learner  # noqa: E402
from rljax.train import experiment  # noqa: E402

# arm name -> (dqn.Config overrides, list of hparam overrides: one grid point each)
SIGMAS = (0.25, 0.75, 2.0)
ARMS = {
    "mse": ({"head": "mse"}, [{}]),
    "huber": ({"head": "huber"}, [{}]),
    "two_hot": ({"head": "two_hot"}, [{}]),
    "hl_gauss": ({"head": "hl_gauss"}, [{"hl_sigma": s} for s in SIGMAS]),
    "c51": ({"head": "c51"}, [{}]),
}


def base_config(env_name: str) -> tuple[dict, dict[str, float]]:
    """The ``dqn`` block (a dict) and hyperparameters of configs/dqn.py for ``env_name``."""
    c = dqn_configs.get_config(env_name)
    return c.dqn.to_dict(), {k: float(v) for k, v in c.hparams.items()}


def train(config, hparams: list[dict], env_name: str, seeds: int, steps: int, seed: int):
    """Trains ``len(hparams) × seeds`` agents in one program; returns episode metrics [A, U]."""
    updates = steps // dqn.env_steps_per_update(config)
    config = dataclasses.replace(config, num_updates=updates)
    dqn.validate(config)
    env = envs.make(env_name)
    run = experiment.RunConfig(env_name=env_name, workdir="", seed=seed, num_seeds=seeds)
    states = experiment.init_population(dqn, config, env, run, hparams)
    _, metrics = experiment.make_chunk_fn(dqn, config, env, updates)(states)
    ret = np.asarray(metrics["episode/return"], np.float64)
    return ret, np.asarray(metrics["episode/count"], np.float64), updates


def summarize(ret: np.ndarray, cnt: np.ndarray, final_frac: float = 0.1) -> dict:
    """Per-agent final return (episodes in the last 10% of updates) and area under the curve."""
    u = ret.shape[1]
    tail = slice(int((1 - final_frac) * u), None)
    safe = np.nan_to_num(ret)
    final = (safe[:, tail] * cnt[:, tail]).sum(1) / np.maximum(cnt[:, tail].sum(1), 1)
    auc = (safe * cnt).sum(1) / np.maximum(cnt.sum(1), 1)
    return {"final": final, "auc": auc}


def iqm(x: np.ndarray) -> float:
    """Interquartile mean (mean of the middle 50%; the mean for fewer than 4 values)."""
    x = np.sort(np.asarray(x))
    if len(x) < 4:
        return float(np.mean(x))
    q = len(x) // 4
    return float(np.mean(x[q : len(x) - q]))


def smooth_curve(ret, cnt, bins=50):
    """Mean return over agents in ``bins`` windows of updates: ``[A, bins]``."""
    chunks = np.array_split(np.arange(ret.shape[1]), bins)
    safe = np.nan_to_num(ret)
    out = [(safe[:, c] * cnt[:, c]).sum(1) / np.maximum(cnt[:, c].sum(1), 1) for c in chunks]
    return np.stack(out, 1), np.array([c[-1] + 1 for c in chunks])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="full budgets instead of --quick")
    parser.add_argument("--envs", default="CartPole-v1,Acrobot-v1,Breakout-MinAtar")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=0, help="env steps per agent (0: mode's)")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--widths", default="", help="e.g. 64,256,1024 (MLP width, 2 layers)")
    parser.add_argument("--reward_noise", default="", help="e.g. 0,1 (reward noise std)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/ablate_stop_regressing")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    widths = [int(w) for w in args.widths.split(",")] if args.widths else [None]
    noises = [float(n) for n in args.reward_noise.split(",")] if args.reward_noise else [None]
    rows, curves = [], {}
    for env_name in args.envs.split(","):
        config, hp = base_config(env_name)
        steps = args.steps or (500_000 if args.full else 100_000)
        # Short runs: ε reaches its floor by mid-run and the buffer holds at most half the run.
        hp["eps_decay_steps"] = min(hp["eps_decay_steps"], steps / 2)
        rows_cap = max(
            config["n_step"] + 1, min(config["buffer_size"], steps // 2) // config["num_envs"]
        )
        config = {**config, "buffer_size": rows_cap * config["num_envs"]}
        for width in widths:
            for noise in noises:
                for arm in args.arms.split(","):
                    overrides, points = ARMS[arm]
                    cfg = learner.config_from_dict(dqn.Config, "dqn", {**config, **overrides})
                    if width is not None:
                        cfg = dataclasses.replace(cfg, hidden=(width, width))
                    grid = [{**hp, **p, **({} if noise is None else {"reward_noise": noise})}
                            for p in points]  # fmt: skip
                    t0 = time.perf_counter()
                    ret, cnt, updates = train(cfg, grid, env_name, args.seeds, steps, args.seed)
                    seconds = time.perf_counter() - t0
                    stats = summarize(ret, cnt)
                    for g, point in enumerate(grid):
                        sl = slice(g * args.seeds, (g + 1) * args.seeds)
                        name = arm if len(grid) == 1 else f"{arm} σ/bin={point['hl_sigma']:g}"
                        row = {"env": env_name, "arm": name, "width": width or cfg.hidden[0],
                               "reward_noise": point["reward_noise"], "env_steps": steps,
                               "seeds": args.seeds, "final_iqm": iqm(stats["final"][sl]),
                               "final_mean": float(np.mean(stats["final"][sl])),
                               "final_per_seed": stats["final"][sl].round(1).tolist(),
                               "auc_mean": float(np.mean(stats["auc"][sl])),
                               "seconds_for_arm": round(seconds, 1)}  # fmt: skip
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                        key = (env_name, row["width"], row["reward_noise"])
                        curve, x = smooth_curve(ret[sl], cnt[sl])
                        x = x * dqn.env_steps_per_update(cfg)
                        curves.setdefault(key, []).append((name, x, curve))
    write_outputs(args.out, rows, curves)


def write_outputs(out: str, rows: list[dict], curves: dict) -> None:
    """results.json, results.md (one table) and curves.png (a panel per env/width/noise)."""
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = [
        "| env | width | reward noise | arm | final return IQM | final mean (per seed) | AUC |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        seeds = ", ".join(f"{v:.0f}" for v in r["final_per_seed"])
        lines.append(
            f"| {r['env']} | {r['width']} | {r['reward_noise']:g} | {r['arm']} | "
            f"{r['final_iqm']:.1f} | {r['final_mean']:.1f} ({seeds}) | {r['auc_mean']:.1f} |"
        )
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.8), squeeze=False)
    for ax, (key, arms) in zip(axes[0], curves.items(), strict=True):
        for name, x, curve in arms:
            mean = curve.mean(0)
            line = ax.plot(x, mean, label=name)[0]
            ax.fill_between(x, curve.min(0), curve.max(0), alpha=0.15, color=line.get_color())
        ax.set_title(f"{key[0]} (width {key[1]}, noise {key[2]:g})", fontsize=9)
        ax.set_xlabel("env steps")
        ax.set_ylabel("episode return")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "curves.png"), dpi=110)
    print(f"wrote {out}/results.md, results.json, curves.png")


if __name__ == "__main__":
    main()
