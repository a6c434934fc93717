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

import os

from rljax import xla_flags

xla_flags.set_flags(fast_compile=True)

import train as train_entry  # noqa: E402  (experiments/train.py: configs -> dataclasses)

from rljax import stats  # noqa: E402
from rljax.train import experiment, study  # noqa: E402

ARMS = {"recurrent": "ppo_rnn", "feedforward": "ppo"}  # arm -> configs/<name>.py


def run(args) -> dict:
    # Every config is built and validated before anything trains.
    runs = {}
    for task in args.tasks.split(","):
        for arm, name in ARMS.items():
            config = study.config(__file__, name, task)
            config.num_seeds, config.progress, config.resume = args.num_seeds, False, True
            workdir = os.path.join(args.workdir, task, arm)
            runs[task, arm] = train_entry.to_dataclasses(config, workdir, 1)
    results = {}
    for task in args.tasks.split(","):
        finals = {}
        for arm in ARMS:
            module, agent_config, run = runs[task, arm]
            _, summary = experiment.run(module, agent_config, run)
            finals[arm] = summary.final_score.reshape(-1).tolist()
        arms = {arm: stats.summarize(v) for arm, v in finals.items()}
        diff = stats.compare(finals["recurrent"], finals["feedforward"])
        results[task] = {"arms": arms, "recurrent_minus_feedforward": diff}
        for arm, s in arms.items():
            print(f"{task} {arm:>11}: IQM {stats.format_interval(s, 'iqm', 1)} | mean "
                  f"{stats.format_interval(s, 'mean', 1)} | n={s['n']}")  # fmt: skip
        low, high = diff["diff_ci"]
        print(f"{task} recurrent - feedforward: {diff['diff']:.1f} [{low:.1f}, {high:.1f}] "
              f"(excludes 0: {stats.excludes_zero(diff['diff_ci'])})")  # fmt: skip
    return results


STUDY = study.Study(
    script=__file__, doc=__doc__, workdir="runs/recurrent_vs_feedforward", run=run,
    report=lambda args, results, record: study.Files(results), quick=None,
    seed=False, low={"num_seeds": 2},
    options={"tasks": "CartPole-NoVel-v1,MemoryChain-bsuite", "num_seeds": 8},
)  # fmt: skip

if __name__ == "__main__":
    STUDY.entry()
