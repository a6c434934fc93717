"""Every study's verdict can fail: its verdict function fed a failing outcome (synthetic numbers)
says something other than "reproduced", and so does every claim in it.

The studies are discovered from experiments/ (every script but the train*.py entry points), so a
new study lands in this test: it must get a failing outcome in ``FAILING`` (a function of the
study's module returning ``{claim: status}`` from its own verdict function) or be listed in
``NOT_YET_FED`` (studies whose verdict is not yet a pure function of summary numbers; the list
may only shrink, and it is asserted to hold exactly the rest).
"""

import importlib.util
import pathlib

import numpy as np
import pytest

from rljax.train import verdicts

ROOT = pathlib.Path(__file__).resolve().parents[2]
STUDIES = sorted(
    p.stem for p in (ROOT / "experiments").glob("*.py") if not p.stem.startswith("train")
)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(
        f"study_{name}", ROOT / "experiments" / f"{name}.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _seeds(rng, centre, n=5, spread=0.01):
    """``n`` per-seed values around ``centre`` (any shape: the seed axis first)."""
    centre = np.asarray(centre, np.float64)
    return centre[None] + spread * rng.standard_normal((n, *centre.shape))


def _statuses(claims: dict) -> dict:
    return {k: verdicts.status(c) for k, c in claims.items()}


def _emergent_exploration_grid(mod):
    rng = np.random.default_rng(0)
    flat = lambda v: _seeds(rng, [v] * 4)  # noqa: E731  # no gain from episode to episode
    ret = {"full": flat(0.5), "no credit": flat(0.1), "no structure": flat(0.9),
           "no memory": flat(0.9), "sweep": _seeds(rng, [0.55, 0.93, 1.0, 1.0]),
           "random walk": flat(0.26), "oracle": flat(1.0)}  # fmt: skip
    return _statuses(mod.claims(ret))


def _emergent_exploration(mod):
    rng = np.random.default_rng(1)
    # the full agent: more regret than uniform and its ablations; no credit worse still
    regret = {n: _seeds(rng, v, spread=0.1) for n, v in {
        "full": 50.0, "no credit": 60.0, "no structure": 5.0, "no memory": 5.0,
        "thompson": 5.0, "ucb1": 6.0, "greedy": 7.0, "uniform": 20.0}.items()}  # fmt: skip
    return _statuses(mod.claims(regret))


def _in_context_darkroom(mod):
    rng = np.random.default_rng(2)
    # DPT's return falls over the episodes and ends below uniform's: [S, B, K]
    returns = {"dpt": _seeds(rng, np.tile([5.0, 4.0, 3.0, 2.0], (8, 1))),
               "uniform": _seeds(rng, np.full((8, 4), 4.0)),
               "oracle": _seeds(rng, np.full((8, 4), 20.0)),
               "sweep": _seeds(rng, np.full((8, 4), 10.0))}  # fmt: skip
    return _statuses(mod.claims(returns))


def _in_context_rl(mod):
    rng = np.random.default_rng(3)
    horizon = 50
    rising = np.linspace(0.1, 0.5, horizon)  # DPT's per-pull regret grows: it learns nothing
    regret = {"dpt": _seeds(rng, np.tile(rising, (4, 1))),
              "thompson": _seeds(rng, np.full((4, horizon), 0.05)),
              "ucb1": _seeds(rng, np.full((4, horizon), 0.1)),
              "uniform": _seeds(rng, np.full((4, horizon), 0.5))}  # fmt: skip
    return _statuses(mod.claims(regret, horizon))


def _estimator_audit(mod):
    g = 8

    def cell(beta_fwd=0.0, cosine=(0.9, 0.95), rel_error=0.5):
        return {"beta_fwd": {"mean": beta_fwd}, "rel_error": {"mean": rel_error},
                "cosine": {"mean": sum(cosine) / 2, "mean_ci": list(cosine)}}  # fmt: skip

    table = {
        f"k3_loss|seq_sum|rloo|G={g}": cell(beta_fwd=0.0),  # no forward-KL part
        f"none|seq_mean_token_mean|rloo|G={g}": cell(cosine=(0.97, 0.99)),  # not tilted
        f"none|seq_sum|rloo|G={g}": cell(cosine=(0.96, 0.98)),
        f"k1_reward|seq_sum|rloo|G={g}": cell(rel_error=0.0),  # the identity: a check only
    }
    findings, identities = mod.decide(table, 0.1, g)
    assert identities == {"k1_in_reward_unbiased": True}  # reported, and not in the verdict
    return verdicts.from_findings(findings)


def _lora_rank(mod):
    rng = np.random.default_rng(4)
    lora, full = _seeds(rng, 0.01, 6), _seeds(rng, 0.2, 6)  # LoRA keeps far less of the gain
    return {"lora_keeps_the_gain": mod.claim(lora, full)["status"]}


def _staleness(mod):
    rng = np.random.default_rng(5)
    design = mod.cells(False, "claims")
    precision = mod.precision_cells(False)
    # lag and bf16 help, no correction repairs anything, CISPO collapses at the top lag
    gain = {"none k=0": 0.1, "none k=8": 0.3, "tis k=8": 0.1, "mis k=8": 0.1,
            "cispo k=0": 0.3, "cispo k=8": 0.0, "bf16 none k=0": 0.3, "bf16 tis k=0": 0.1,
            "bf16 mis k=0": 0.1}  # fmt: skip
    arms = {label: {"base": {"pass@1": 0.2},
                    "learners": [{"pass@1": 0.2 + v} for v in _seeds(rng, gain[label])]}
            for label in (*design, *precision)}  # fmt: skip
    return {k: verdicts.status(c) for k, c in mod.decide(arms, design, precision)["claims"].items()}


def _agent_calculator(mod):
    rng = np.random.default_rng(6)
    # the tool arm loses to the no-tool arm and falls below its base
    arm = lambda base, v: {"base": {"pass@1": base}, "learners": [  # noqa: E731
        {"pass@1": x} for x in _seeds(rng, v, 4)]}  # fmt: skip
    arms = {"grpo + calculator": arm(0.3, 0.2), "grpo, no tool": arm(0.1, 0.4),
            "grpo, no tool, bare base": arm(0.1, 0.1)}  # fmt: skip
    return _statuses(mod.decide(arms)["claims"])


FAILING = {
    "agent_calculator": _agent_calculator,
    "emergent_exploration_grid": _emergent_exploration_grid,
    "emergent_exploration": _emergent_exploration,
    "in_context_darkroom": _in_context_darkroom,
    "in_context_rl": _in_context_rl,
    "estimator_audit": _estimator_audit,
    "lora_rank": _lora_rank,
    "staleness": _staleness,
}
NOT_YET_FED = {
    "ablate_effective_horizon", "ablate_stop_regressing", "backtracking", "brorl_bandit",
    "compose_fg", "curricula", "dp_cvar", "echo_chamber", "hparam_landscape", "kl_bayes",
    "nft_pacs", "ngrpo_hard", "offline_data_quality", "one_shot", "passk_divergence",
    "recurrent_vs_feedforward", "reward_validity", "rover_lm", "rover_trees", "scalerl_curves",
    "stitching", "tricks_or_traps",
}  # fmt: skip


def test_every_study_is_fed_or_listed():
    """A new study in experiments/ fails here until it gets a failing outcome."""
    assert not set(FAILING) & NOT_YET_FED
    assert set(FAILING) | NOT_YET_FED == set(STUDIES), sorted(
        set(STUDIES) ^ (set(FAILING) | NOT_YET_FED))  # fmt: skip


@pytest.mark.slow  # imports each study (jax, its learners): seconds each on the 2-core CPU
@pytest.mark.parametrize("name", sorted(FAILING))
def test_a_failing_outcome_is_not_reproduced(name):
    claims = FAILING[name](_load(name))
    assert claims, name
    held = [k for k, s in claims.items() if s == verdicts.REPRODUCED]
    assert not held, f"{name}: claims that hold on a failing outcome: {held}"
    assert verdicts.overall(claims) != verdicts.REPRODUCED
