"""CVaR with stock-augmented distributional DP vs risk-neutral and stock-free greedy control.

Reproduces the CVaR story of Ávila Pires et al. (2025) on two exact tabular MDPs (the gamble chain
and the slippery cliff) for α in {0.05, 0.1, 0.25}:
  * risk-neutral value iteration (max E[G]);
  * stock-augmented CVaR optimization (Rockafellar–Uryasev over the initial stock, greedy in the
    augmented state (t, s, c));
  * greedy distributional control without the stock (argmax_a CVaR_α of the return-to-go).
Each policy's CVaR and mean are computed exactly (distributional DP on the stock grid) and checked
by Monte Carlo. Runs in seconds on CPU:

  python experiments/dp_cvar.py --outdir runs/dp_cvar

Plots: cvar.png.
"""

from rljax import xla_flags

xla_flags.set_flags()

import os  # noqa: E402

import jax  # noqa: E402

from rljax import cli, dp  # noqa: E402
from rljax.train import study  # noqa: E402

ALPHAS = (0.05, 0.1, 0.25)
METHODS = ("risk-neutral VI", "stock-augmented CVaR", "greedy CVaR, no stock")


def _environments():
    cliff = dp.cliff_gridworld()
    cliff_bounds = (-float(cliff.horizon) - 10.0, 0.0)  # at most H steps of -1 and one fall
    return {
        "gamble_chain": (dp.gamble_chain(), dp.stock_grid(dp.gamble_chain())),
        "cliff": (cliff, dp.stock_grid(cliff, bounds=cliff_bounds)),
    }


def _evaluate(mdp, grid, policy, initial_stock, alpha, key, num_episodes):
    """Exact CVaR / mean of G from the law of c_0 + G, and a Monte Carlo CVaR."""
    law = dp.evaluate_stock_policy(mdp, grid, policy, initial_stock)
    returns_grid = grid - initial_stock
    if policy.ndim == 2:  # stock-free policy: broadcast over the grid for the simulator
        policy = jax.numpy.broadcast_to(policy[..., None], policy.shape + grid.shape)
    samples = dp.sample_stock_returns(mdp, policy, grid, initial_stock, key, num_episodes)
    return {
        "cvar": float(dp.cvar(returns_grid, law, alpha)),
        "cvar_mc": float(dp.cvar_of_samples(samples, alpha)),
        "mean": float(dp.mean(returns_grid, law)), "mean_mc": float(samples.mean()),
    }  # fmt: skip


def run(args) -> list[dict]:
    rows = []
    key = jax.random.PRNGKey(args.seed)
    for env_name, (mdp, grid) in _environments().items():
        risk_neutral = dp.value_iteration(mdp).policy
        for alpha in ALPHAS:
            stock = dp.cvar_optimize(mdp, grid, alpha)
            greedy, _ = dp.greedy_distributional_control(mdp, grid, dp.cvar, (alpha,))
            candidates = {
                METHODS[0]: (risk_neutral, 0.0),
                METHODS[1]: (stock.solution.policy, stock.initial_stock), METHODS[2]: (greedy, 0.0),
            }  # fmt: skip
            for method, (policy, c_0) in candidates.items():
                key, sub = jax.random.split(key)
                stats = _evaluate(mdp, grid, policy, c_0, alpha, sub, args.episodes)
                rows.append({"env": env_name, "alpha": alpha, "method": method} | stats)
            rows[-2]["cvar_dp_objective"] = float(stock.cvar)
    return rows


def _markdown(rows: list[dict], num_episodes: int, seconds: float) -> str:
    lines = [
        "# CVaR_α of the return: exact (distributional DP) and Monte Carlo",
        "",
        f"Monte Carlo: {num_episodes} episodes per policy. Wall time {seconds:.1f} s (CPU).",
        "",
        "| env | α | method | CVaR_α (exact) | CVaR_α (MC) | mean (exact) |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['env']} | {r['alpha']} | {r['method']} | {r['cvar']:.3f} | "
            f"{r['cvar_mc']:.3f} | {r['mean']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def plot(args, rows: list[dict], _) -> None:
    path = os.path.join(args.workdir, "cvar.png")
    envs = sorted({r["env"] for r in rows}, reverse=True)
    cvar = {(r["env"], r["alpha"], r["method"]): r["cvar"] for r in rows}
    width = 0.26
    with study.figure(path, ncols=len(envs), figsize=(5 * len(envs), 3.6)) as (_, axes):
        for ax, env in zip(axes, envs, strict=True):
            for i, method in enumerate(METHODS):
                vals = [cvar[env, a, method] for a in ALPHAS]
                ax.bar([j + (i - 1) * width for j in range(len(ALPHAS))], vals, width, label=method)
            ax.set_xticks(range(len(ALPHAS)), [f"α={a}" for a in ALPHAS])
            ax.set(title=env, ylabel="CVaR_α of return (exact)")
            ax.axhline(0.0, color="k", lw=0.5)
        axes[0].legend(fontsize=8)


def report(args, rows: list[dict], record: dict) -> study.Files:
    return study.Files(rows, _markdown(rows, args.episodes, record["seconds"]))


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/dp_cvar", run=run, report=report, plot=plot,
    quick=None, workdir_flags=("--outdir",), low={"episodes": 1},
    check=lambda args: cli.check_int("--seed", args.seed, low=0, high=2**32 - 1),
    options={"episodes": (20_000, "Monte Carlo")},
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
