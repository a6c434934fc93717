"""Math RLVR on local GSM8K / MATH files: (SFT) -> GRPO-family learners -> pass@k.

    python experiments/train_math.py --config=configs/grpo_math.py:gsm8k,tiny \
        --config.train_path=data/gsm8k/train.jsonl --config.test_path=data/gsm8k/test.jsonl \
        [--workdir=runs/math_gsm8k]

Every learner (`config.presets` x `config.num_seeds`) trains in one vmapped, jitted program whose
rewards come from the math-verify checker (rljax.lm.math_checker) through `jax.pure_callback`.
Writes metrics.jsonl and results.json (pass@k per learner) into --workdir. Bad input is one
line (`error: ...`, exit 2; `--debug` for a traceback). docs/math.md has the GPU commands.
"""

import sys

from rljax import cli, xla_flags

xla_flags.set_flags()

from absl import flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from rljax.lm import math_rlvr  # noqa: E402


def make_flags(argv: list[str]) -> flags.FlagValues:
    fv = flags.FlagValues()
    config_flags.DEFINE_config_file(
        "config", None, "Config file.", lock_config=True, flag_values=fv, sys_argv=argv
    )
    flags.DEFINE_string("workdir", None, "Output directory.", flag_values=fv)
    flags.DEFINE_boolean("debug", False, "Tracebacks instead of one-line errors.", flag_values=fv)
    return fv


def from_config(c, workdir: str | None) -> math_rlvr.MathRunConfig:
    """The frozen run config of a parsed `configs/grpo_math.py` config."""
    fields = tuple((k, v) for k, v in c.fields.items() if v)
    return math_rlvr.MathRunConfig(
        train_path=c.train_path,
        test_path=c.test_path,
        workdir=workdir or f"runs/math_{c.layout}",
        layout=c.layout,
        fields=fields,
        answer_modes=tuple(c.answer_modes.split(",")),
        model=c.model,
        tokenizer=c.tokenizer,
        chat_template=c.chat_template,
        d_model=c.d_model,
        n_layers=c.n_layers,
        n_heads=c.n_heads,
        d_ff=c.d_ff,
        prompt_length=c.prompt_length,
        completion_length=c.completion_length,
        prompts_per_step=c.prompts_per_step,
        group_size=c.group_size,
        steps=c.steps,
        presets=tuple(c.presets.split(",")),
        num_seeds=c.num_seeds,
        seed=c.seed,
        sft_steps=c.sft_steps,
        temperature=c.temperature,
        format_weight=c.format_weight,
        checker_timeout_s=c.checker_timeout_s,
        checker_workers=c.checker_workers,
        eval_problems=c.eval_problems,
        eval_samples=c.eval_samples,
    )


def parse(argv: list[str]) -> math_rlvr.MathRunConfig:
    fv = cli.parse_config_flags(argv, make_flags, "--config=configs/grpo_math.py:gsm8k,tiny")
    try:
        run = from_config(fv["config"].value, fv["workdir"].value)
        math_rlvr.validate(run)
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise cli.ConfigError(cli.one_line(e)) from None
    return run


def main(argv: list[str]) -> int:
    run = parse(argv)
    try:
        results = math_rlvr.run(run)
    except ValueError as e:  # a bad data file: one line with the file and row
        raise cli.ConfigError(cli.one_line(e)) from None
    for name, summary in results["learners"].items():
        n = summary["num_samples"]
        print(f"{name}: pass@1 {summary['pass@1']:.3f}, pass@{n} {summary[f'pass@{n}']:.3f}")
    print(f"checker: {results['checker']}")
    print(f"outputs: {run.workdir}/(metrics.jsonl, results.json)")
    return 0


if __name__ == "__main__":
    cli.main(lambda: main(sys.argv))
