"""The RLVR learner: every preset's loss and gradient equal the named composition of library
functions; advantages and aggregations by code equal the named ones; config checks."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import returns
from rljax.agents import grpo
from rljax.agents.grpo import groups, objective, presets
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.logprobs import completion_log_probs, completion_token_stats
from rljax.losses import implicit, kl, policy_gradient, reduce, sequence

MODEL = TransformerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_len=16)
B, G, P, A, R = 3, 4, 6, 6, 2
CONFIG = grpo.Config(
    model=MODEL, reward_kind="int", completion_length=A, prompts_per_step=B, group_size=G,
    reference_samples=R,
)  # fmt: skip
REDUCE = {
    "token_mean": reduce.token_mean,
    "seq_mean_token_mean": reduce.seq_mean_token_mean,
    "seq_mean_token_sum": reduce.seq_mean_token_sum,
    "seq_mean_token_sum_norm": functools.partial(reduce.seq_mean_token_sum_norm, max_len=float(A)),
}
ADV = {
    "grpo": returns.grpo_advantages,
    "dr_grpo": returns.dr_grpo_advantages,
    "lite_ppo": returns.lite_ppo_advantages,
    "batch": returns.batch_advantages,
    "rloo": returns.rloo_advantages,
    "ngrpo": returns.ngrpo_advantages,
}


REF_SAMPLE_KEYS = (
    "ref_prompt_tokens", "ref_prompt_mask", "ref_tokens", "ref_completion_mask", "ref_seq_logp"
)  # fmt: skip


def _batch(seed=0):
    """A micro-batch as rollouts make them: rows in groups of G (R reference samples) that share
    their prompt, some prompts left-padded."""
    rng = np.random.default_rng(seed)
    n = B * G
    group_mask = np.ones((B, P), np.int32)
    group_mask[::3, :2] = 0
    group_prompts = rng.integers(3, 60, size=(B, P)).astype(np.int32) * group_mask
    prompt_mask = np.repeat(group_mask, G, axis=0)
    lengths = rng.integers(1, A + 1, size=n)
    completion_mask = (np.arange(A)[None] < lengths[:, None]).astype(np.int32)
    completion_mask[-G:] = 0  # a dropped group (dynamic sampling filler)
    correct = rng.integers(0, 2, size=n).astype(np.float32)
    correct[:G] = [1, 0, 0, 1]
    rate = np.repeat(correct.reshape(B, G).mean(1), G)
    ref_n = B * R
    return {
        "prompt_tokens": np.repeat(group_prompts, G, axis=0),
        "prompt_mask": prompt_mask,
        "tokens": rng.integers(3, 60, size=(n, A)).astype(np.int32) * completion_mask,
        "completion_mask": completion_mask,
        "mask": completion_mask.astype(np.float32),
        "old_logp": -rng.uniform(0.5, 4.0, size=(n, A)).astype(np.float32) * completion_mask,
        "ref_logp": -rng.uniform(0.5, 4.0, size=(n, A)).astype(np.float32) * completion_mask,
        "old_mean_log_probs": -rng.uniform(3.0, 6.0, size=(n, A)).astype(np.float32)
        * completion_mask,
        "adv": rng.normal(size=n).astype(np.float32),
        "correct": correct,
        "correct_rate": rate.astype(np.float32),
        "ref_prompt_tokens": np.repeat(group_prompts, R, axis=0),
        "ref_prompt_mask": np.repeat(group_mask, R, axis=0),
        "ref_tokens": rng.integers(3, 60, size=(ref_n, A)).astype(np.int32),
        "ref_completion_mask": np.ones((ref_n, A), np.int32),
        "ref_seq_logp": -rng.uniform(5, 15, size=ref_n).astype(np.float32),
    }


def _typed(b: dict):
    """The dict batch as the update's typed `groups.Batch` and `groups.RefSamples`."""
    return (
        groups.Batch(**{f: b[f] for f in groups.Batch._fields}),
        groups.RefSamples(**{f: b[f"ref_{f}"] for f in groups.RefSamples._fields}),
    )


def _named_loss(params, v: dict, b: dict):
    """The preset written out with the library's named functions (the pre-population trainer)."""
    logp, entropy, mean_log_probs = completion_token_stats(
        params, MODEL, b["prompt_tokens"], b["prompt_mask"], b["tokens"], b["completion_mask"]
    )
    mask, agg = b["mask"], REDUCE[v["aggregation"]]
    has_tok = (mask.sum(1) > 0).astype(jnp.float32)
    adv_t = jnp.broadcast_to(b["adv"][:, None], logp.shape)
    eps = dict(eps_low=v["eps_low"], eps_high=v["eps_high"])
    name = v["policy_loss"]
    if name == "gspo":
        policy = reduce.masked_mean(
            sequence.gspo(logp, b["old_logp"], b["adv"], mask, **eps), has_tok
        )
    elif name == "pacs":
        seq = lambda x: jnp.sum(x * mask, 1).reshape(B, G)  # noqa: E731
        per = implicit.pacs(
            seq(logp), seq(b["old_logp"]), b["correct"].reshape(B, G), has_tok.reshape(B, G),
            beta=v["pacs_beta"],
        ).reshape(-1)  # fmt: skip
        policy = reduce.masked_mean(per, has_tok)
    else:
        if name == "ppo_clip":
            per = policy_gradient.ppo_clip(logp, b["old_logp"], adv_t, **eps)
        elif name == "cispo":
            per = policy_gradient.cispo(logp, b["old_logp"], adv_t, **eps)
        elif name == "reinforce":
            per = policy_gradient.reinforce(logp, adv_t)
        elif name == "rover":
            per = implicit.rover(
                logp, b["old_logp"], mean_log_probs, b["old_mean_log_probs"], b["adv"], mask,
                rho=v["rover_rho"],
            )  # fmt: skip
        elif name == "sapo":
            per = policy_gradient.sapo(
                logp, b["old_logp"], adv_t, tau_pos=v["sapo_tau_pos"], tau_neg=v["sapo_tau_neg"]
            )
        elif name == "vespo":
            per = sequence.vespo(
                logp, b["old_logp"], b["adv"], mask, k_pos=v["vespo_k_pos"],
                lambda_pos=v["vespo_lambda_pos"], k_neg=v["vespo_k_neg"],
                lambda_neg=v["vespo_lambda_neg"],
            )  # fmt: skip
        elif name == "luspo":
            per = sequence.luspo(logp, b["old_logp"], b["adv"], mask, **eps)
        else:
            rate = b["correct_rate"][:, None]
            # All-right / all-wrong groups carry no signal: masked out, their rate kept off 0/1.
            safe = jnp.clip(rate, 1e-3, 1 - 1e-3)
            per = implicit.nft(logp, b["old_logp"], b["correct"][:, None], safe)
            per = jnp.where((rate > 0) & (rate < 1), per, 0.0)
        policy = agg(per, mask)
    loss = policy - v["entropy_coef"] * agg(entropy, mask)
    if v["divergence"] in ("k1", "k2", "k3") and v["placement"] == "loss":
        loss = loss + v["kl_coef"] * agg(getattr(kl, v["divergence"])(logp, b["ref_logp"]), mask)
    if v["divergence"] in ("forward_kl", "js"):
        ref_logp, _ = completion_log_probs(
            params, MODEL, b["ref_prompt_tokens"], b["ref_prompt_mask"], b["ref_tokens"],
            b["ref_completion_mask"],
        )  # fmt: skip
        gen = kl.forward_kl_generator if v["divergence"] == "forward_kl" else kl.js_generator
        log_u = jnp.sum(ref_logp, 1) - b["ref_seq_logp"]
        loss = loss + v["kl_coef"] * jnp.mean(gen(log_u))
    return loss


@pytest.fixture(scope="module")
def params():
    return init_params(MODEL, jax.random.key(0))


@jax.jit
def _population_value_and_grad(params, hp, batch, norms):
    """The population's loss and gradient: one program for every preset (values are data)."""
    return jax.value_and_grad(lambda p: grpo.loss_fn(p, CONFIG, hp, *_typed(batch), norms)[0])(
        params
    )


_loss_fn = jax.jit(grpo.loss_fn, static_argnums=1)


@pytest.mark.parametrize("preset", sorted(presets.PRESETS))
@pytest.mark.slow  # the population program compiles once for all presets; the named one each
def test_population_loss_and_gradient_equal_the_named_preset(params, preset):
    values = presets.resolve(preset, entropy_coef=0.01)  # exercise the entropy term too
    hp = grpo.make_hparams(presets.hparam_values(values))
    batch = jax.tree.map(jnp.asarray, _batch())
    norms = objective.minibatch_norms(batch["mask"], B * R)
    got, got_grad = _population_value_and_grad(params, hp, batch, norms)
    want_fn = lambda p, b: _named_loss(p, values, b)  # noqa: E731
    want, want_grad = jax.jit(jax.value_and_grad(want_fn))(params, batch)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert abs(float(want)) > 1e-4  # a loss that could differ
    for g, w in zip(jax.tree.leaves(got_grad), jax.tree.leaves(want_grad), strict=True):
        scale = float(jnp.max(jnp.abs(w))) + 1e-12  # two compiled programs: fused rounding
        np.testing.assert_allclose(g / scale, w / scale, atol=1e-5)


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
def test_micro_batches_with_minibatch_norms_sum_to_the_minibatch_loss(params):
    """Gradient accumulation: two halves (whole groups) give the loss of the whole."""
    hp = grpo.make_hparams(presets.hparam_values(presets.resolve("grpo")))
    batch = jax.tree.map(jnp.asarray, _batch(1))
    whole = _loss_fn(
        params, CONFIG, hp, *_typed(batch), objective.minibatch_norms(batch["mask"], B * R)
    )
    norms = objective.minibatch_norms(batch["mask"], B * R)
    rows = [np.arange(0, 2 * G), np.arange(2 * G, B * G)]
    ref_rows = [np.arange(0, 2 * R), np.arange(2 * R, B * R)]
    parts = 0.0
    for r, rr in zip(rows, ref_rows, strict=True):
        micro = {k: v[rr] if k in REF_SAMPLE_KEYS else v[r] for k, v in batch.items()}
        parts = parts + _loss_fn(params, CONFIG, hp, *_typed(micro), norms)[0]
    np.testing.assert_allclose(parts, whole[0], rtol=1e-5)


@pytest.mark.parametrize("name", presets.ADVANTAGES)
def test_advantage_by_code_equals_the_named_estimator(name):
    rng = np.random.default_rng(2)
    rewards = jnp.asarray(rng.integers(0, 2, size=(5, 4)).astype(np.float32))
    mask = jnp.ones((5, 4)).at[4].set(0.0)
    values = presets.hparam_values(presets.resolve("grpo", advantage=name))
    choice = grpo._choice(grpo.make_hparams(values))
    kwargs = {"r_max": 1.0} if name == "ngrpo" else {}
    np.testing.assert_allclose(
        objective.advantages(choice, rewards, mask, 1.0), ADV[name](rewards, mask, **kwargs)
    )


def test_preset_values_and_errors():
    named = "grpo dr_grpo dapo lite_ppo ngrpo gspo rloo cispo nft pacs rover dph_fkl dph_js"
    named = (named + " sapo vespo luspo").split()
    assert set(presets.PRESETS) == set(named)
    rloo = presets.resolve("rloo")
    assert rloo["aggregation"] == "seq_mean_token_sum" and rloo["num_epochs"] == 1
    with pytest.raises(ValueError, match="preset='ppo2' is unknown; valid: grpo"):
        presets.resolve("ppo2")
    with pytest.raises(ValueError, match="rl.advantage='nope' is unknown"):
        presets.check(presets.resolve("grpo", advantage="nope"))
    with pytest.raises(ValueError, match="rl.eps_high=-0.1 is invalid"):
        presets.check(presets.resolve("grpo", eps_high=-0.1))
    with pytest.raises(ValueError, match="rl.eps_low=nan"):
        presets.check(presets.resolve("grpo", eps_low=float("nan")))
    with pytest.raises(ValueError, match="only be placed in the loss"):
        presets.check(presets.resolve("dph_js", placement="reward"))
    with pytest.raises(ValueError, match="would be ignored"):
        presets.check(presets.resolve("dapo", kl_coef=0.1))
    with pytest.raises(ValueError, match="rl.rover_rho=0.0 is invalid"):
        presets.check(presets.resolve("rover", rover_rho=0.0))
    with pytest.raises(ValueError, match="rl.num_epochs=0"):
        presets.check(presets.resolve("grpo", num_epochs=0))
    with pytest.raises(ValueError, match="not divisible by the minibatch schedule"):
        grpo.validate(CONFIG.__class__(**{**CONFIG.__dict__, "max_minibatches": 2}))


def test_zero_advantage_share_counts_groups_without_gradient():
    # groups: all wrong, mixed, all right, all wrong but dropped by dynamic sampling
    rewards = jnp.asarray([[0.0] * 8, [1.0] + [0.0] * 7, [1.0] * 8, [0.0] * 8])
    mask = jnp.ones_like(rewards)
    valid = jnp.asarray([1.0, 1.0, 1.0, 0.0])
    grpo_adv = returns.grpo_advantages(rewards, mask)
    ngrpo_adv = returns.ngrpo_advantages(rewards, mask, r_max=1.0)
    # GRPO: the all-wrong and all-right trained groups carry nothing (2 of 3)
    np.testing.assert_allclose(groups.zero_advantage_share(grpo_adv, valid), 2 / 3, rtol=1e-6)
    # NGRPO's virtual r_max sample gives the all-wrong group A = -1/3; all-right stays 0
    np.testing.assert_allclose(ngrpo_adv[0], -1 / 3, rtol=1e-5)
    np.testing.assert_allclose(groups.zero_advantage_share(ngrpo_adv, valid), 1 / 3, rtol=1e-6)
    assert float(groups.zero_advantage_share(grpo_adv, jnp.zeros(4))) == 0.0


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
def test_vmapped_presets_give_each_solo_loss_and_gradient(params):
    """All presets vmapped as one population on the same batch: each member's loss and gradient
    equal that preset's computed alone (what a population's first micro-step does)."""
    names = sorted(presets.PRESETS)
    hps = [grpo.make_hparams(presets.hparam_values(presets.resolve(n))) for n in names]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *hps)
    batch = jax.tree.map(jnp.asarray, _batch(3))
    norms = objective.minibatch_norms(batch["mask"], B * R)
    fn = jax.value_and_grad(lambda p, hp: grpo.loss_fn(p, CONFIG, hp, *_typed(batch), norms)[0])
    pop_loss, pop_grad = jax.jit(jax.vmap(fn, in_axes=(None, 0)))(params, stacked)
    for i, hp in enumerate(hps):
        loss, grad = jax.jit(fn)(params, hp)
        np.testing.assert_allclose(pop_loss[i], loss, rtol=1e-5, atol=1e-7, err_msg=names[i])
        for g, w in zip(jax.tree.leaves(pop_grad), jax.tree.leaves(grad), strict=True):
            scale = float(jnp.max(jnp.abs(w))) + 1e-12
            np.testing.assert_allclose(g[i] / scale, w / scale, atol=1e-5, err_msg=names[i])
