"""Every preset alone vs the same preset inside one population of all presets, after 20 steps.

    PYTHONPATH=. python scripts/check_preset_equality.py --workdir runs/preset_equality

A population of all 12 presets is the hardest case for the one compiled program: it samples
dynamically (DAPO), so every member draws twice the groups; it needs the base's own samples
(forward KL / JS), so every member draws them; it runs the largest epoch count and the least
common multiple of the minibatch counts, so members with fewer accumulate micro-batches and
skip epochs. Each preset is then trained alone (its own, smaller static shapes) with the same
seed, and its training metrics and final parameters are compared with its population member's.
Uses the tiny equation testbed of tests/train/test_lm_experiment.py (150 SFT steps, so rewards
vary within groups).

What "within float32 tolerance" means is measured, not assumed: the population does the same
maths with other static shapes (micro-batch sums, larger batched matrix products), so it rounds
differently, and 20 steps of sampling and Adam (which divides by the root of tiny second moments)
amplify a rounding difference. The floor is therefore each preset trained alone a second time
with its starting parameters moved by one float32 ulp (`np.nextafter` towards +inf, every
element): the difference that one rounding of the start produces after the same steps. A member
is equal when its metric and parameter differences from the solo run are each at most 10x that
floor (or below the strict bounds: metrics rtol 2e-4, parameters atol 2e-5, for presets whose
floor is 0). Writes results.md and results.json into --workdir and exits 1 if any preset fails.
"""

from rljax import cli, xla_flags

xla_flags.set_flags()

import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import machine  # noqa: E402
from rljax.io.metrics import MetricsWriter  # noqa: E402
from rljax.lm import presets  # noqa: E402
from rljax.train import lm_experiment, loop  # noqa: E402

KEYS = ("reward/mean", "correct/mean", "loss/total", "grad_norm", "entropy")
STRICT_METRICS, STRICT_PARAMS = 2e-4, 2e-5  # bounds for a preset whose one-ulp floor is zero
FLOOR_FACTOR = 10.0  # a member may differ by at most this multiple of the one-ulp floor
_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "grpo.py")


def _config(workdir: str, name: str, steps: int, **fields):
    spec = importlib.util.spec_from_file_location("grpo_config", _CONFIG)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    c = module.get_config("equation,tiny")
    c.base_cache_dir = os.path.join(workdir, "base")
    c.sft.steps = 150
    c.run.steps, c.run.chunk_steps = steps, steps
    c.run.format_weight = 0.5
    c.run.eval_problems = 16
    c.eval.num_problems, c.eval.num_samples = 8, 2
    c.progress = False
    for key, value in fields.items():
        node, *path = c, *key.split(".")
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return lm_experiment.from_config(c, os.path.join(workdir, name))


def main(argv=None):
    cli.quiet_logs()
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default="runs/preset_equality")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps={args.steps} is invalid; allowed: an integer >= 1")
    cli.check_workdir("--workdir", args.workdir)
    start = time.perf_counter()
    names = tuple(presets.PRESETS)
    pop_cfg = _config(args.workdir, "population", args.steps, **{"sweep.preset": ",".join(names)})
    pop_states, _, _ = lm_experiment.run(pop_cfg)
    pop_rows = MetricsWriter(pop_cfg.workdir).read()
    pop_params = jax.device_get(pop_states.params)
    base = base_params(pop_cfg)
    table = {}
    for index, name in enumerate(names):
        cfg = _config(args.workdir, name, args.steps, preset=name)
        states, _, _ = lm_experiment.run(cfg)
        rows = MetricsWriter(cfg.workdir).read()
        nudged_cfg = _config(args.workdir, f"{name}_ulp", args.steps, preset=name)
        nudged_states, nudged_rows = train_nudged(nudged_cfg)
        single = [np.asarray(a)[0] for a in jax.tree.leaves(jax.device_get(states.params))]
        member_rows = [r for r in pop_rows if r["grid"] == index]
        member = [np.asarray(x)[index] for x in jax.tree.leaves(pop_params)]
        nudged = [np.asarray(a)[0] for a in jax.tree.leaves(jax.device_get(nudged_states.params))]
        r = {
            "max_rel_metric_diff": metric_diff(rows, member_rows),
            "max_abs_param_diff": param_diff(single, member),
            "ulp_floor_metric_diff": metric_diff(rows, nudged_rows),
            "ulp_floor_param_diff": param_diff(single, nudged),
            "max_param_change_from_base": param_diff(single, base),
            "steps": len(rows),
        }
        r["equal"] = within(
            r["max_rel_metric_diff"], r["ulp_floor_metric_diff"], STRICT_METRICS
        ) and within(r["max_abs_param_diff"], r["ulp_floor_param_diff"], STRICT_PARAMS)
        table[name] = r
        print(
            f"{name:10s} metrics {r['max_rel_metric_diff']:.1e} (floor "
            f"{r['ulp_floor_metric_diff']:.1e})  params {r['max_abs_param_diff']:.1e} (floor "
            f"{r['ulp_floor_param_diff']:.1e})  moved {r['max_param_change_from_base']:.3f}"
        )
    seconds = time.perf_counter() - start
    lines = [
        f"# Preset equality: alone vs in a population of all {len(names)} presets",
        "",
        f"{args.steps} RL steps, tiny equation testbed; machine: {machine.describe()}; "
        f"{seconds:.0f} s.",
        "",
        f"Floor: the same preset alone, started one float32 ulp away; equal = each difference "
        f"<= {FLOOR_FACTOR:g}x its floor (or <= rtol {STRICT_METRICS:g} / atol "
        f"{STRICT_PARAMS:g}).",
        "",
        "| preset | max rel. metric diff (one-ulp floor) | max abs. param diff (floor) | "
        "largest param change | equal |",
        "|---|---|---|---|---|",
        *(
            f"| {n} | {r['max_rel_metric_diff']:.1e} ({r['ulp_floor_metric_diff']:.1e}) | "
            f"{r['max_abs_param_diff']:.1e} ({r['ulp_floor_param_diff']:.1e}) | "
            f"{r['max_param_change_from_base']:.3f} | {'yes' if r['equal'] else 'NO'} |"
            for n, r in table.items()
        ),
    ]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.workdir, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump(
            {
                "presets": table,
                "steps": args.steps,
                "seconds": seconds,
                "floor_factor": FLOOR_FACTOR,
            },
            f,
            indent=1,
        )
    print(text)
    return 0 if all(r["equal"] for r in table.values()) else 1


def metric_diff(want_rows: list[dict], got_rows: list[dict]) -> float:
    """Largest relative difference of the training metrics over all steps."""
    return max(
        abs(got[k] - want[k]) / max(abs(want[k]), 1e-6)
        for want, got in zip(want_rows, got_rows, strict=True)
        for k in KEYS
    )


def param_diff(want: list, got: list) -> float:
    """Largest absolute difference over all parameter elements."""
    return max(float(np.max(np.abs(a - b))) for a, b in zip(want, got, strict=True))


def within(diff: float, floor: float, strict: float) -> bool:
    return diff <= max(FLOOR_FACTOR * floor, strict)


def train_nudged(cfg):
    """`cfg`'s single learner trained with its starting parameters one float32 ulp up."""
    points = lm_experiment.validate(cfg)
    agent_cfg, data, hparams, *_ = lm_experiment.build(cfg, points)
    states, _ = lm_experiment.init_learners(agent_cfg, data, hparams, cfg)
    states = states._replace(
        params=jax.tree.map(lambda x: jnp.nextafter(x, jnp.inf), states.params)
    )
    loop_cfg = loop.LoopConfig(
        workdir=cfg.workdir, title="one ulp", num_updates=cfg.steps, chunk_updates=cfg.chunk_steps,
        checkpoint_every=cfg.steps, env_steps_per_update=1, num_seeds=1, grid=tuple(points),
        resume=False, progress=False, score_key="eval/pass@1", count_key=None,
        rows_per_learner=True,
    )  # fmt: skip
    chunk = lm_experiment.make_chunk_fn(agent_cfg, cfg.chunk_steps)
    states, _ = loop.run(loop_cfg, states, chunk, data)
    return states, MetricsWriter(cfg.workdir).read()


def base_params(cfg) -> list:
    """The SFT base's parameter leaves (cached by the runs above), to show the learners moved."""
    agent_cfg, data, *_ = lm_experiment.build(cfg, lm_experiment.validate(cfg))
    return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(data.base_params))]


if __name__ == "__main__":
    cli.main(main)
