"""Recurrent PPO against feed-forward PPO on partially observable tasks, 8 seeds each.

    python experiments/recurrent_vs_feedforward.py [--tasks=CartPole-NoVel-v1,MemoryChain-bsuite]
        [--workdir=runs/recurrent_vs_feedforward] [--num_seeds=8]

Each arm is the shipped config (``configs/ppo_rnn.py:<task>``, ``configs/ppo.py:<task>``) run by
``rljax.train.experiment`` into ``<workdir>/<task>/<arm>``; an arm that finished already is read
back, not retrained (resume). Prints, per task, each arm's final return (IQM and mean with 95%
stratified-bootstrap intervals, ``rljax.stats``) and the difference recurrent - feed-forward
with its interval, and writes ``<workdir>/results.json``. Time: about 7 + 3 minutes for
CartPole-NoVel-v1 on a shared 2-core CPU (docs/learners_recurrent.md).
"""

import importlib.util
import json
import os
import sys

from rljax import cli, prng_kernel, xla_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARMS = {"recurrent": "configs/ppo_rnn.py", "feedforward": "configs/ppo.py"}


def _load_config(path: str, arg: str):
    spec = importlib.util.spec_from_file_location("config_file", os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


def main() -> int:
    parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="CartPole-NoVel-v1,MemoryChain-bsuite")
    parser.add_argument("--workdir", default="runs/recurrent_vs_feedforward")
    parser.add_argument("--num_seeds", type=int, default=8)
    args = parser.parse_args()
    if args.num_seeds < 2:
        parser.error(f"--num_seeds={args.num_seeds} is invalid; allowed: an integer >= 2")
    xla_flags.set_flags(fast_compile=True)
    prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)
    sys.path.insert(0, os.path.join(ROOT, "experiments"))
    import train as train_entry

    from rljax import stats
    from rljax.train import experiment

    # Every config is built and validated before anything trains.
    runs = {}
    for task in args.tasks.split(","):
        for arm, path in ARMS.items():
            config = _load_config(path, task)
            config.num_seeds, config.progress, config.resume = args.num_seeds, False, True
            workdir = os.path.join(args.workdir, task, arm)
            runs[task, arm] = train_entry.to_dataclasses(config, workdir, 1)
    results = {}
    for task in args.tasks.split(","):
        finals = {}
        for arm in ARMS:
            module, agent_config, run = runs[task, arm]
            _, summary = experiment.run(module, agent_config, run)
            finals[arm] = summary.final_return.reshape(-1).tolist()
        arms = {arm: stats.summarize(v) for arm, v in finals.items()}
        diff = stats.compare(finals["recurrent"], finals["feedforward"])
        results[task] = {"arms": arms, "recurrent_minus_feedforward": diff}
        for arm, s in arms.items():
            print(f"{task} {arm:>11}: IQM {stats.format_interval(s, 'iqm', 1)} | mean "
                  f"{stats.format_interval(s, 'mean', 1)} | n={s['n']}")  # fmt: skip
        low, high = diff["diff_ci"]
        print(f"{task} recurrent - feedforward: {diff['diff']:.1f} [{low:.1f}, {high:.1f}] "
              f"(excludes 0: {stats.excludes_zero(diff['diff_ci'])})")  # fmt: skip
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    cli.main(main)
