"""Small-LM RLVR end to end: SFT base (cached) -> a population of RL learners -> pass@k.

    python experiments/train_lm.py --config=configs/grpo.py:arithmetic [--workdir=runs/x]
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic --config.num_seeds=4 \
        --config.sweep.preset=grpo,dr_grpo,dapo,lite_ppo
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic --config.resume=True

Every grid point (a preset and swept values) x `num_seeds` learners trains in one vmapped,
jitted program. Writes into --workdir (default runs/lm_<task>_<preset>): metrics.jsonl/.csv
(one row per update and learner), curves.png (quick held-out pass@1, seed bands per grid point),
summary.json, config.json, checkpoints/, results.md/.json (base vs every grid point with 95%
intervals over seeds) and pass_at_k.png. An earlier run in --workdir is moved aside unless
resume=True; a resume whose config differs in more than the budget/logging fields is refused.
`--cpu_devices=N` shards the learners over N CPU devices (a divisor of the population); LM
populations run fastest with about two devices per core (8 learners on 2 cores: 4, docs/lm.md).
Bad input is one line (`error: ...`, exit 2; `--debug` for a traceback); exit codes: 0 done,
1 failed (NaN loss), 128 + signal when stopped by SIGINT/SIGTERM (after a checkpoint).
"""

import sys

from rljax import cli, prng_kernel, xla_flags

try:
    _NUM_CPU_DEVICES = xla_flags.cpu_devices_arg(sys.argv[1:], default=1)
except ValueError as e:
    cli.fail(e)
xla_flags.set_flags(num_cpu_devices=_NUM_CPU_DEVICES if _NUM_CPU_DEVICES > 1 else None)
prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)

from absl import flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from rljax.train import lm_experiment  # noqa: E402
from rljax.train.loop import NonFiniteLossError  # noqa: E402


def make_flags(argv: list[str]) -> flags.FlagValues:
    """A fresh set of this script's flags for ``argv`` (so tests can parse many command lines)."""
    fv = flags.FlagValues()
    config_flags.DEFINE_config_file(
        "config", None, "Config file.", lock_config=True, flag_values=fv, sys_argv=argv
    )
    flags.DEFINE_string("workdir", None, "Output directory.", flag_values=fv)
    flags.DEFINE_integer(
        "cpu_devices", 1, "CPU devices to shard the learners over.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "debug", False, "Show tracebacks instead of one-line errors.", flag_values=fv
    )
    return fv


def parse(argv: list[str]) -> lm_experiment.LMRunConfig:
    """Parses and validates a command line; nothing is built, trained or compiled."""
    fv = cli.parse_config_flags(argv, make_flags, "--config=configs/grpo.py:arithmetic")
    try:
        run_cfg = lm_experiment.from_config(
            fv["config"].value, fv["workdir"].value, fv["cpu_devices"].value
        )
        cli.check_workdir("--workdir", run_cfg.workdir)
        cli.check_workdir("--config.data_dir", run_cfg.data_dir)
        lm_experiment.validate(run_cfg)
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise cli.ConfigError(cli.one_line(e)) from None
    return run_cfg


def main(argv: list[str]) -> int:
    """Parses, validates, trains; returns the exit code (0 done, 128 + signal if stopped)."""
    cli.quiet_logs()  # orbax logs every save at INFO
    if any(a in ("-h", "--help", "--helpfull") for a in argv[1:]):
        print(__doc__)
        print(make_flags([argv[0]]).get_help())
        return 0
    run_cfg = parse(argv)
    try:
        _, summary, text = lm_experiment.run(run_cfg)
    except NonFiniteLossError as e:
        cli.fail(e, cli.EXIT_FAILED)
    print(text)
    # the loop's score is the last quick evaluation during training (few problems and samples),
    # not the final held-out evaluation of the table above: the line says which it is
    print(
        summary.line(
            f"RLVR {run_cfg.task}",
            "quick pass@1 (last in-training evaluation, not the table's)",
            "samples",
            digits=3,
        )
    )
    print(f"outputs: {run_cfg.workdir}/(results.md, metrics.csv, curves.png, pass_at_k.png)")
    return cli.exit_code(summary.stop_signal if summary.interrupted else None)


if __name__ == "__main__":
    cli.main(lambda: main(sys.argv))
