"""Small-LM RLVR end to end: SFT base (cached) -> a population of RL learners -> pass@k.

    python experiments/train_lm.py --config=configs/grpo.py:arithmetic [--workdir=runs/x]
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic --config.num_seeds=4 \
        --config.sweep.preset=grpo,dr_grpo,dapo,lite_ppo
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic --config.resume=True

Every grid point (a preset and swept values) x `num_seeds` learners trains in one vmapped,
jitted program. Writes into --workdir (default runs/lm_<task>_<preset>): metrics.jsonl/.csv
(one row per update and learner), curves.png (quick held-out pass@1, seed bands per grid point),
summary.json, checkpoints/, results.md/.json (base vs every grid point with 95% intervals over
seeds) and pass_at_k.png. An earlier run in --workdir is moved aside unless resume=True.
`--cpu_devices=N` shards the learners over N CPU devices (a divisor of the population).
"""

import sys

from rljax import xla_flags

try:
    _NUM_CPU_DEVICES = xla_flags.cpu_devices_arg(sys.argv[1:], default=1)
except ValueError as e:
    sys.exit(f"error: {e}")
xla_flags.set_flags(num_cpu_devices=_NUM_CPU_DEVICES if _NUM_CPU_DEVICES > 1 else None)


from absl import app, flags, logging  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from rljax.train import lm_experiment  # noqa: E402
from rljax.train.loop import NonFiniteLossError  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file.", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory.")
flags.DEFINE_integer("cpu_devices", 1, "CPU devices to shard the learners over.")


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # orbax logs every save at INFO
    try:
        run_cfg = lm_experiment.from_config(_CONFIG.value, _WORKDIR.value, _NUM_CPU_DEVICES)
        _, summary, text = lm_experiment.run(run_cfg)
    except (ValueError, NonFiniteLossError) as e:
        sys.exit(f"error: {e}")
    print(text)
    print(summary.line(f"RLVR {run_cfg.task}"))
    print(f"outputs: {run_cfg.workdir}/(results.md, metrics.csv, curves.png, pass_at_k.png)")
    if summary.interrupted:
        sys.exit(130)


if __name__ == "__main__":
    app.run(main)
