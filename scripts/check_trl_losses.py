"""rljax's GRPO objective against TRL's own GRPOTrainer loss on the same inputs: value, gradient.

    python -m venv /tmp/trlvenv && /tmp/trlvenv/bin/pip install torch "trl==1.16.*"
    /tmp/trlvenv/bin/pip install -e .
    /tmp/trlvenv/bin/python scripts/check_trl_losses.py [--out results/trl_losses/results.json]

About 20 s on the 2-core CPU (import time mostly). torch and trl live only in that side
environment: CI never installs them, and tests/losses/test_losses_trl_family.py checks the same
functions by hand without them.

What is compared. TRL's loss is `GRPOTrainer._compute_loss` itself, called on a minimal stand-in
for the trainer: a namespace holding only the attributes that method reads (loss type, ε, the
`args` fields, a no-op accelerator, a metrics dict), with `_get_per_token_logps_and_entropies`
returning our log-probs tensor instead of running a model. Its gradient is `backward()` onto
that tensor. rljax's is `rljax.agents.grpo.objective.policy_loss` of the preset (with the option
as a field override), differentiated with `jax.grad` with respect to the same log-probs.
`mask_truncated_completions` is applied in TRL outside the loss, inside
`_generate_and_score_completions` (which needs a model and a tokenizer): the script restates its
rule on the torch side (a completion whose last token is neither EOS nor PAD is truncated; its
completion mask is zeroed before `num_items_in_batch` is counted) and uses rljax's own
`objective.loss_rows` / `minibatch_norms(seq_mask=)` on the rljax side. The KL term is off
(β = 0) on both sides: only the policy loss is compared.

Inputs: 4 groups x 4 completions of up to 10 tokens, rows that stop early, stop on the last slot,
or are truncated (no stop token); log-ratios from 1e-4 to 0.4 per token plus two rows shifted by
±0.7 so that the sequence ratio passes the two-sided cap; one group with zero advantages. Both
float64 (agreement of the maths) and float32 (what training runs).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import subprocess
import sys
from collections import defaultdict
from types import SimpleNamespace

import jax

jax.config.update("jax_enable_x64", True)  # float64 cases; float32 ones are cast explicitly

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import trl  # noqa: E402
from trl.trainer import grpo_trainer  # noqa: E402

from rljax import machine  # noqa: E402
from rljax.agents import grpo  # noqa: E402
from rljax.agents.grpo import objective, presets  # noqa: E402

GROUPS, G, L = 4, 4, 10
EOS, PAD, VOCAB = 2, 0, 32
# The other TRL source read while writing rljax's versions. Its loss code differs from 1.16's
# only where no value here changes: luspo's sum written with the mask, dapo / vespo's normalizer
# rescaled by steps_per_generation (1 here), and the entropy bonus (off here).
TRL_MAIN_READ = "huggingface/trl main at f2cd57710ae345ea6428ae95363267fcf38a3dc8 (1.10.0.dev0)"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    loss_type: str  # TRL's loss_type
    level: str  # TRL's importance_sampling_level
    preset: str  # rljax's preset
    overrides: tuple = ()  # rljax field overrides (name, value)
    delta: float | None = None  # TRL's delta (rljax: the same value as rl.delta)
    mask_truncated: bool = False
    trl_eps: tuple[float, float] | None = None  # TRL's (epsilon, epsilon_high) if not rljax's
    f64_tolerance: float = 1e-12
    note: str = ""


# TRL builds SAPO's temperatures with torch.where on Python floats, which gives float32 tensors
# whatever the inputs' dtype: τ_neg = 1.05 is 1.0499999523 there, so float64 agreement stops
# near 1e-8; τ values exact in float32 (the second SAPO case) agree to rounding.
_SAPO_NOTE = "TRL holds the temperatures in float32 (torch.where of Python floats)"
_SAPO_EXACT = (("sapo_tau_neg", 1.25),)


_TRUNC = (("mask_truncated_completions", 1),)
CASES = (
    # the new loss types, alone and with truncated completions masked
    Case("sapo", "sapo", "token", "sapo", f64_tolerance=1e-7, note=_SAPO_NOTE),
    Case("sapo(tau_neg=1.25)", "sapo", "token", "sapo", _SAPO_EXACT),
    Case("sapo+mask_truncated", "sapo", "token", "sapo", _TRUNC + _SAPO_EXACT, mask_truncated=True),
    Case("vespo", "vespo", "token", "vespo"),
    Case("vespo+mask_truncated", "vespo", "token", "vespo", _TRUNC, mask_truncated=True),
    Case("luspo", "luspo", "sequence", "luspo"),
    Case("luspo+mask_truncated", "luspo", "sequence", "luspo", _TRUNC, mask_truncated=True),
    # the two-sided clip on every loss TRL applies it to
    Case("grpo+delta", "grpo", "token", "grpo", (("delta", 1.5),), delta=1.5),
    Case("dapo+delta", "dapo", "token", "dapo", (("delta", 1.5),), delta=1.5),
    Case("dr_grpo+delta", "dr_grpo", "token", "dr_grpo", (("delta", 1.5),), delta=1.5),
    Case("gspo+delta", "grpo", "sequence", "gspo", (("delta", 1.5),), delta=1.5),
    Case("luspo+delta", "luspo", "sequence", "luspo", (("delta", 1.5),), delta=1.5),
    # truncation masking on the existing aggregations (sequence means keep the masked rows)
    Case("grpo+mask_truncated", "grpo", "token", "grpo", _TRUNC, mask_truncated=True),
    Case("dapo+mask_truncated", "dapo", "token", "dapo", _TRUNC, mask_truncated=True),
    Case("dr_grpo+mask_truncated", "dr_grpo", "token", "dr_grpo", _TRUNC, mask_truncated=True),
    Case("gspo+mask_truncated", "grpo", "sequence", "gspo", _TRUNC, mask_truncated=True),
    # the losses both had before (context for the figures above)
    Case("grpo", "grpo", "token", "grpo"),
    Case("dapo", "dapo", "token", "dapo"),
    Case("dr_grpo", "dr_grpo", "token", "dr_grpo"),
    Case("gspo", "grpo", "sequence", "gspo"),
    # TRL's CISPO caps ρ at epsilon_high itself; rljax's at 1 + eps_high, no lower bound
    Case("cispo", "cispo", "token", "cispo", trl_eps=(1.0, 1.28)),
)


def make_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    """Completions that stop early, stop on the last slot, or are truncated; float64 arrays."""
    rng = np.random.default_rng(seed)
    n = GROUPS * G
    kind = np.array(["early", "last", "truncated", "early"] * GROUPS)  # 4 truncated rows
    kind[1] = "truncated"  # and one group with two
    lengths = np.where(kind == "early", rng.integers(3, L, size=n), L)
    tokens = np.full((n, L), PAD, np.int32)
    mask = np.zeros((n, L))
    for i in range(n):
        tokens[i, : lengths[i]] = rng.integers(3, VOCAB, size=lengths[i])
        if kind[i] != "truncated":
            tokens[i, lengths[i] - 1] = EOS
        mask[i, : lengths[i]] = 1.0
    old = -rng.uniform(0.1, 3.0, size=(n, L)) * mask
    scale = np.array([1e-4, 3e-3, 0.05, 0.4])[np.arange(n) % 4][:, None]
    shift = np.zeros((n, 1))
    shift[4], shift[9] = 0.7, -0.7  # sequence ratios e^{±0.7}: past the cap δ = 1.5 and below
    logp = (old + scale * rng.normal(size=(n, L)) + shift) * mask
    adv = rng.normal(size=n)
    adv[4], adv[9] = -1.0, 1.0  # the shifted rows: one the cap acts on, one it does not
    adv[12:16] = 0.0  # a group whose rewards did not vary
    return {"tokens": tokens, "mask": mask, "old": old, "logp": logp, "adv": adv, "kind": kind}


def _trl_stand_in(case: Case, values: dict):
    """The attributes `GRPOTrainer._compute_loss` reads, and nothing else."""
    eps_low, eps_high = case.trl_eps or (values["eps_low"], values["eps_high"])
    args = SimpleNamespace(
        delta=case.delta,
        sapo_temperature_pos=values["sapo_tau_pos"],
        sapo_temperature_neg=values["sapo_tau_neg"],
        vespo_k_pos=values["vespo_k_pos"],
        vespo_lambda_pos=values["vespo_lambda_pos"],
        vespo_k_neg=values["vespo_k_neg"],
        vespo_lambda_neg=values["vespo_lambda_neg"],
        use_bias_correction_kl=False,
        steps_per_generation=1,
    )
    accelerator = SimpleNamespace(
        num_processes=1,
        gather=lambda x: x,
        gather_for_metrics=lambda x: x,
        reduce=lambda x, reduction="sum": x,
        sync_gradients=True,
    )
    return SimpleNamespace(
        args=args,
        accelerator=accelerator,
        loss_type=case.loss_type,
        importance_sampling_level=case.level,
        epsilon_low=eps_low,
        epsilon_high=eps_high,
        beta=0.0,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1,
        max_completion_length=L,
        aux_loss_enabled=False,
        _entropy_bonus_enabled=False,
        _metrics=defaultdict(lambda: defaultdict(list)),
        get_gamma_weights=grpo_trainer.GRPOTrainer.get_gamma_weights,
    )


def trl_loss(case: Case, values: dict, x: dict, dtype) -> tuple[float, np.ndarray]:
    """TRL's `_compute_loss` value and its gradient with respect to the per-token log-probs."""
    tdtype = {np.float64: torch.float64, np.float32: torch.float32}[dtype]
    mask = torch.tensor(x["mask"], dtype=torch.int64)
    if case.mask_truncated:  # TRL's rule from _generate_and_score_completions, restated
        last = [x["tokens"][i, int(m.sum()) - 1] for i, m in enumerate(x["mask"])]
        truncated = torch.tensor([t not in (EOS, PAD) for t in last])
        mask = mask * (~truncated).unsqueeze(1).int()
    logp = torch.tensor(x["logp"].astype(dtype), dtype=tdtype, requires_grad=True)
    self = _trl_stand_in(case, values)
    self._get_per_token_logps_and_entropies = lambda *a, **k: (logp, torch.zeros_like(logp), None)
    inputs = {
        "prompt_ids": torch.zeros((logp.shape[0], 1), dtype=torch.int64),
        "prompt_mask": torch.ones((logp.shape[0], 1), dtype=torch.int64),
        "completion_ids": torch.tensor(x["tokens"], dtype=torch.int64),
        "completion_mask": mask,
        "advantages": torch.tensor(x["adv"].astype(dtype), dtype=tdtype),
        "old_per_token_logps": torch.tensor(x["old"].astype(dtype), dtype=tdtype),
        "num_items_in_batch": mask.sum(),
    }
    loss = grpo_trainer.GRPOTrainer._compute_loss(self, None, inputs)
    loss.backward()
    return float(loss.detach()), logp.grad.numpy().astype(np.float64)


def rljax_loss(case: Case, values: dict, x: dict, dtype) -> tuple[float, np.ndarray]:
    """`objective.policy_loss` of the preset and its gradient with respect to `logp`."""
    hp = presets.hparam_values(values)
    choice = objective.Choice(
        **{
            f: jnp.asarray(hp[f], jnp.int32 if f in grpo.INT_FIELDS else dtype)
            for f in objective.Choice._fields
        }
    )
    seq_mask = jnp.asarray(x["mask"], dtype)
    tokens = jnp.asarray(x["tokens"])
    code = jnp.asarray(hp["mask_truncated_completions"])
    kept = objective.loss_rows(code, tokens, seq_mask, (EOS,)).astype(dtype)
    mask = seq_mask * kept[:, None]
    norms = objective.minibatch_norms(mask, 0, seq_mask=seq_mask)
    zeros = jnp.zeros_like(seq_mask)
    n = seq_mask.shape[0]

    def loss(logp):
        mb = objective.MicroBatch(
            logp, zeros, zeros, zeros, jnp.asarray(x["old"], dtype), zeros, mask,
            jnp.asarray(x["adv"], dtype), jnp.zeros((n,), dtype), jnp.full((n,), 0.5, dtype), G,
        )  # fmt: skip
        return objective.policy_loss(choice, mb, norms, float(L))[0]

    value, grad = jax.jit(jax.value_and_grad(loss))(jnp.asarray(x["logp"], dtype))
    return float(value), np.asarray(grad, np.float64)


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    out = os.path.join(ROOT, "results", "trl_losses", "results.json")
    parser.add_argument("--out", default=out)
    args = parser.parse_args(argv)
    x = make_inputs()
    tolerance = {"float64": 1e-12, "float32": 1e-5}  # unless a case says otherwise (float64)
    rows, ok = [], True
    for case in CASES:
        values = presets.resolve(case.preset, **dict(case.overrides))
        for dtype in (np.float64, np.float32):
            v_trl, g_trl = trl_loss(case, values, x, dtype)
            v_rl, g_rl = rljax_loss(case, values, x, dtype)
            name = np.dtype(dtype).name
            row = {
                "case": case.name,
                "dtype": name,
                "trl": {"loss_type": case.loss_type, "importance_sampling_level": case.level,
                        "delta": case.delta, "mask_truncated_completions": case.mask_truncated},
                "rljax": {"preset": case.preset, **dict(case.overrides)},
                "value_trl": v_trl,
                "value_rljax": v_rl,
                "max_abs_diff_value": abs(v_trl - v_rl),
                "max_abs_diff_grad": float(np.max(np.abs(g_trl - g_rl))),
                "max_abs_grad": float(np.max(np.abs(g_trl))),
            }  # fmt: skip
            tol = case.f64_tolerance if dtype is np.float64 else tolerance[name]
            row["tolerance"], row["note"] = tol, case.note
            row["ok"] = max(row["max_abs_diff_value"], row["max_abs_diff_grad"]) <= tol
            ok &= row["ok"]
            rows.append(row)
            print(
                f"{case.name:24s} {name}  value {v_trl:+.6f}  |Δvalue| "
                f"{row['max_abs_diff_value']:.1e}  |Δgrad| {row['max_abs_diff_grad']:.1e}"
                f"  {'ok' if row['ok'] else 'DIFFERENT'}"
            )
    source = grpo_trainer.__file__
    with open(source, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    card = {
        "what": "max |TRL − rljax| of the policy loss and of its gradient w.r.t. the per-token "
        "log-probs, same inputs (scripts/check_trl_losses.py docstring)",
        "trl_version": trl.__version__,
        "trl_source": "trl wheel from PyPI; trl/trainer/grpo_trainer.py sha256 " + digest,
        "trl_also_read": TRL_MAIN_READ,
        "torch_version": torch.__version__,
        "rljax_commit": _git_commit(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "machine": machine.describe(),
        "command": " ".join(["python", "scripts/check_trl_losses.py", *(argv or sys.argv[1:])]),
        "inputs": {
            "rows": int(x["mask"].shape[0]),
            "group_size": G,
            "max_len": L,
            "truncated_rows": int(np.sum(x["kind"] == "truncated")),
            "rows_stopping_on_the_last_slot": int(np.sum(x["kind"] == "last")),
        },
        "tolerance": tolerance,
        "all_ok": bool(ok),
        "cases": rows,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(card, f, indent=1)
        f.write("\n")
    print(f"{'all agree' if ok else 'SOME DIFFER'}; wrote {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
