"""Every preset alone vs the same preset inside one population of all presets, after 20 steps.

    PYTHONPATH=. python scripts/check_preset_equality.py --workdir runs/preset_equality

A population of all presets is the hardest case for the one compiled program: it samples
dynamically (DAPO), so every member draws twice the groups; it needs the base's own samples
(forward KL / JS), so every member draws them; it runs the largest epoch count and the least
common multiple of the minibatch counts, so members with fewer accumulate micro-batches and
skip epochs. Each preset is then trained alone (its own, smaller static shapes) with the same
seed, and its training metrics and final parameters are compared with its population member's.
Uses the tiny equation testbed of tests/train/test_lm_experiment.py (150 SFT steps, so rewards
vary within groups).

What "within float32 tolerance" means is measured, not assumed: the population does the same
maths as batched (vmapped) products, so it rounds differently at every step, and 20 steps of
sampling and Adam (which divides by the root of tiny second moments, so a gradient element that
is pure rounding noise moves by a whole learning rate) amplify a rounding difference. The floor
is therefore the larger of two other float32 evaluations of each preset alone: started one
float32 ulp away (`np.nextafter` towards +inf, every element: one rounding of the start), and
with every minibatch gradient summed over twice the micro-batches (the same maths rounded
differently at every step, as the population is). A member is equal when its metric and
parameter differences from the solo run are each at most 10x that floor (or below the strict
bounds: metrics rtol 2e-4, parameters atol 2e-5, for presets whose floor is 0), and its sampled
rewards and correctness equal the solo run's exactly. A fourth solo run locates the difference:
the preset alone with the population's static shapes (oversampling, base samples, epoch and
micro-batch schedule) separates what the shapes change from what vmapping adds.
Writes results.md and results.json into --workdir and exits 1 if any preset fails.
"""

from rljax import cli, prng_kernel, xla_flags

xla_flags.set_flags()
prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)

import dataclasses  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rljax import machine  # noqa: E402
from rljax.agents.grpo import presets  # noqa: E402
from rljax.io.metrics import MetricsWriter  # noqa: E402
from rljax.train import lm_experiment, loop, population  # noqa: E402

KEYS = ("reward/mean", "correct/mean", "loss/total", "grad_norm", "entropy")
EXACT_KEYS = ("reward/mean", "correct/mean")  # sampled outcomes: equal bit for bit
STRICT_METRICS, STRICT_PARAMS = 2e-4, 2e-5  # bounds for a preset whose one-ulp floor is zero
FLOOR_FACTOR = 10.0  # a member may differ by at most this multiple of the one-ulp floor
# The static settings a population imposes on every member (rljax.train.lm_experiment).
POPULATION_SHAPES = ("oversample", "reference_samples", "max_epochs", "max_minibatches")
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
    pop_shapes, base = population_config_and_base(pop_cfg)
    table = {}
    for index, name in enumerate(names):
        cfg = _config(args.workdir, name, args.steps, preset=name)
        states, _, _ = lm_experiment.run(cfg)
        rows = MetricsWriter(cfg.workdir).read()
        nudged_cfg = _config(args.workdir, f"{name}_ulp", args.steps, preset=name)
        nudged_states, nudged_rows = train_alone(nudged_cfg, nudge=True)
        split_cfg = _config(args.workdir, f"{name}_split", args.steps, preset=name)
        split_states, split_rows = train_alone(split_cfg, split=True)
        split = solo_params(split_states)
        shaped_cfg = _config(args.workdir, f"{name}_shapes", args.steps, preset=name)
        shaped_states, shaped_rows = train_alone(shaped_cfg, shapes=pop_shapes)
        shaped = solo_params(shaped_states)
        single = solo_params(states)
        member_rows = [r for r in pop_rows if r["grid"] == index]
        member = [np.asarray(x)[index] for x in jax.tree.leaves(pop_params)]
        nudged = solo_params(nudged_states)
        r = {
            "max_rel_metric_diff": metric_diff(rows, member_rows),
            "max_abs_param_diff": param_diff(single, member),
            "ulp_floor_metric_diff": metric_diff(rows, nudged_rows),
            "ulp_floor_param_diff": param_diff(single, nudged),
            "split_floor_metric_diff": metric_diff(rows, split_rows),
            "split_floor_param_diff": param_diff(single, split),
            "max_param_change_from_base": param_diff(single, base),
            # alone with the population's static shapes: what the shapes alone change ...
            "shapes_metric_diff": metric_diff(rows, shaped_rows),
            "shapes_param_diff": param_diff(single, shaped),
            # ... and what is left for the population (vmap) itself
            "member_vs_shapes_metric_diff": metric_diff(shaped_rows, member_rows),
            "member_vs_shapes_param_diff": param_diff(shaped, member),
            "steps": len(rows),
            "rewards_identical": all(
                a[k] == b[k] for a, b in zip(rows, member_rows, strict=True) for k in EXACT_KEYS
            ),
        }
        r["floor_metric_diff"] = max(r["ulp_floor_metric_diff"], r["split_floor_metric_diff"])
        r["floor_param_diff"] = max(r["ulp_floor_param_diff"], r["split_floor_param_diff"])
        r["equal"] = within(r["max_rel_metric_diff"], r["floor_metric_diff"], STRICT_METRICS) and (
            within(r["max_abs_param_diff"], r["floor_param_diff"], STRICT_PARAMS)
        )
        table[name] = r
        print(
            f"{name:10s} metrics {r['max_rel_metric_diff']:.1e} (floors: ulp "
            f"{r['ulp_floor_metric_diff']:.1e}, split {r['split_floor_metric_diff']:.1e})  "
            f"params {r['max_abs_param_diff']:.1e} (floors: ulp {r['ulp_floor_param_diff']:.1e}, "
            f"split {r['split_floor_param_diff']:.1e}; shapes alone "
            f"{r['shapes_param_diff']:.1e})  moved {r['max_param_change_from_base']:.3f}",
            flush=True,
        )
    seconds = time.perf_counter() - start
    lines = [
        f"# Preset equality: alone vs in a population of all {len(names)} presets",
        "",
        f"{args.steps} RL steps, tiny equation testbed; machine: {machine.describe()}; "
        f"{seconds:.0f} s.",
        "",
        "Floor: the larger of two other float32 evaluations of the same preset alone: started "
        "one float32 ulp away (ulp), and with every minibatch gradient summed over twice the "
        f"micro-batches (split: the same maths, rounded differently at every step); equal = "
        f"each difference <= {FLOOR_FACTOR:g}x its floor (or <= rtol {STRICT_METRICS:g} / atol "
        f"{STRICT_PARAMS:g}). Rewards and correctness are compared exactly.",
        "",
        "| preset | max rel. metric diff (floor: ulp / split) | max abs. param diff (floor: ulp /"
        " split) | largest param change | equal |",
        "|---|---|---|---|---|",
        *(
            f"| {n} | {r['max_rel_metric_diff']:.1e} ({r['ulp_floor_metric_diff']:.1e} / "
            f"{r['split_floor_metric_diff']:.1e}) | {r['max_abs_param_diff']:.1e} "
            f"({r['ulp_floor_param_diff']:.1e} / {r['split_floor_param_diff']:.1e}) | "
            f"{r['max_param_change_from_base']:.3f} | {'yes' if r['equal'] else 'NO'} |"
            for n, r in table.items()
        ),
        "",
        "Sampled rewards and correctness identical to the solo run at every step: "
        + ", ".join(f"{n} {'yes' if r['rewards_identical'] else 'NO'}" for n, r in table.items())
        + ".",
        "",
        "Where the difference comes from: each preset alone once more, with the population's "
        f"static shapes ({', '.join(f'{f}={getattr(pop_shapes, f)}' for f in POPULATION_SHAPES)})"
        " instead of its own. 'shapes alone' is that run against the plain solo run (the same "
        "learner, only the static shapes differ); 'member vs shapes' is the population member "
        "against it (what vmapping inside the population adds).",
        "",
        "| preset | max abs. param diff: member vs solo | shapes alone | member vs shapes | "
        "max rel. metric diff: shapes alone | member vs shapes |",
        "|---|---|---|---|---|---|",
        *(
            f"| {n} | {r['max_abs_param_diff']:.1e} | {r['shapes_param_diff']:.1e} | "
            f"{r['member_vs_shapes_param_diff']:.1e} | {r['shapes_metric_diff']:.1e} | "
            f"{r['member_vs_shapes_metric_diff']:.1e} |"
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
    return 0 if all(r["equal"] and r["rewards_identical"] for r in table.values()) else 1


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


def train_alone(cfg, *, nudge: bool = False, shapes=None, split: bool = False):
    """`cfg`'s single learner, with its starting parameters one float32 ulp up (`nudge`), the
    static shapes of the population config `shapes` (oversampling, base samples, epoch and
    micro-batch schedule) instead of its own, or every minibatch's gradient summed over twice
    the micro-batches (`split`: the same maths, rounded differently at every step)."""
    points = lm_experiment.validate(cfg)
    agent_cfg, data, hparams, *_ = lm_experiment.build(cfg, points)
    if shapes is not None:
        agent_cfg = dataclasses.replace(
            agent_cfg, **{f: getattr(shapes, f) for f in POPULATION_SHAPES}
        )
    if split:
        agent_cfg = dataclasses.replace(agent_cfg, max_minibatches=2 * agent_cfg.max_minibatches)
    spec = lm_experiment.spec(cfg, agent_cfg, data, hparams, points)
    states = population.init(spec)
    if nudge:
        states = states._replace(
            params=jax.tree.map(lambda x: jnp.nextafter(x, jnp.inf), states.params)
        )
    loop_cfg = loop.LoopConfig(
        workdir=cfg.workdir, title="alone", num_updates=cfg.steps, chunk_updates=cfg.chunk_steps,
        checkpoint_every=cfg.steps, env_steps_per_update=1, num_seeds=1, grid=tuple(points),
        resume=False, progress=False, score_key="eval/pass@1", count_key=None,
        rows_per_learner=True,
    )  # fmt: skip
    states, _ = loop.run(loop_cfg, states, population.chunk_fn(spec, cfg.chunk_steps), data)
    return states, MetricsWriter(cfg.workdir).read()


def population_config_and_base(cfg):
    """The population's static config and the SFT base's parameter leaves (the base cached by
    the population run: nothing is trained), to impose the shapes and show the learners moved."""
    agent_cfg, data, *_ = lm_experiment.build(cfg, lm_experiment.validate(cfg))
    return agent_cfg, [np.asarray(x) for x in jax.tree.leaves(jax.device_get(data.base_params))]


def solo_params(states) -> list:
    """The parameter leaves of a one-learner run's only learner."""
    return [np.asarray(a)[0] for a in jax.tree.leaves(jax.device_get(states.params))]


if __name__ == "__main__":
    cli.main(main)
