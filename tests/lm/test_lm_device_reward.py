"""Device rewards agree with the host verifiers on sampled and adversarial completions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.sampling import sample
from rljax.lm.tasks import TASKS, device_reward, make_split, reward, safe_verify
from rljax.lm.tasks.batches import completion_length, prompt_length

EXACT_TASKS = ("arithmetic", "equation", "strings")
FORMAT_WEIGHT = 0.25


def _host(task, problems, tokens, rows):
    rewards, correct = [], []
    for token_row, row in zip(tokens, rows, strict=True):
        text, done = tokenizer.decode(token_row)
        verdict = safe_verify(task, problems[row], text)
        rewards.append(reward(verdict, done, format_weight=FORMAT_WEIGHT))
        correct.append(done and verdict.correct)
    return np.asarray(rewards, np.float32), np.asarray(correct)


def _adversarial(task, problems, length, rng):
    """Near-misses of every answer, plus random token strings with PAD/BOS/EOS/unused ids."""
    rows, texts = [], []
    for i, p in enumerate(problems):
        final = p.answer.rsplit("=", 1)[-1]
        for t in (
            p.answer, p.answer + "0", "-" + p.answer, "0" + final, "00" + final, p.answer[:-1],
            "", "=", p.answer + "=", "--1", "-", "-0", "1" * 10, "=" + final, final + "a",
            p.answer.upper(), p.answer + p.answer, "9" * 9, "-" + "9" * 9, "x" * 20,
        ):  # fmt: skip
            rows.append(i)
            texts.append("".join(c for c in t if c in tokenizer.CHARS))
    tokens = np.full((len(texts), length), tokenizer.PAD, np.int32)
    for r, t in enumerate(texts):
        ids = (tokenizer.encode(t) + [tokenizer.EOS])[:length]
        tokens[r, : len(ids)] = ids
    # Random strings over the whole vocabulary: PAD and BOS inside the text, no EOS, ids 61-63.
    noise = rng.integers(0, tokenizer.VOCAB_SIZE, size=(2000, length)).astype(np.int32)
    digits = rng.integers(3, 13, size=(2000, length)).astype(np.int32)  # digit soup + EOS/PAD
    digits[rng.random(digits.shape) < 0.15] = tokenizer.EOS
    digits[rng.random(digits.shape) < 0.05] = tokenizer.PAD
    digits[rng.random(digits.shape) < 0.05] = tokenizer.encode("-")[0]
    digits[rng.random(digits.shape) < 0.05] = tokenizer.encode("=")[0]
    extra = np.concatenate([noise, digits])
    return (
        np.concatenate([tokens, extra]),
        np.concatenate([rows, rng.integers(0, len(problems), size=len(extra))]),
    )


def _device(task, problems, tokens, rows):
    table = jax.tree.map(jnp.asarray, device_reward.make_table(task, problems))
    fn = jax.jit(
        lambda t, r: device_reward.score(
            device_reward.KINDS[task.name], t, table, r, format_weight=FORMAT_WEIGHT
        )
    )
    rewards, correct = fn(jnp.asarray(tokens), jnp.asarray(rows, jnp.int32))
    return np.asarray(rewards), np.asarray(correct)


@pytest.mark.parametrize("name", EXACT_TASKS)
def test_device_verdicts_match_host_on_adversarial_completions(name):
    task = TASKS[name]
    problems = make_split(task, num_per_level=30, seed=3)
    tokens, rows = _adversarial(task, problems, completion_length(task), np.random.default_rng(0))
    assert len(tokens) >= 5000
    want_r, want_c = _host(task, problems, tokens, rows)
    got_r, got_c = _device(task, problems, tokens, rows)
    np.testing.assert_array_equal(got_c, want_c)
    np.testing.assert_allclose(got_r, want_r, atol=1e-6)
    assert want_c.sum() >= len(problems)  # the exact answers are among them, and pass


@pytest.mark.parametrize("name", EXACT_TASKS)
def test_device_verdicts_match_host_on_sampled_completions(name):
    task = TASKS[name]
    problems = make_split(task, num_per_level=40, seed=5)
    model = TransformerConfig(
        d_model=32, n_layers=1, n_heads=2, d_ff=64,
        max_len=prompt_length(task) + completion_length(task),
    )  # fmt: skip
    params = init_params(model, jax.random.key(1))
    table = device_reward.make_table(task, problems)
    rows = np.repeat(np.arange(len(problems)), 16)
    out = jax.jit(
        lambda p, t, m, k: sample(p, model, t, m, k, max_new_tokens=completion_length(task))
    )(params, table.prompt_tokens[rows], table.prompt_mask[rows], jax.random.key(2))
    tokens = np.asarray(out.tokens)
    want_r, want_c = _host(task, problems, tokens, rows)
    got_r, got_c = _device(task, problems, tokens, rows)
    np.testing.assert_array_equal(got_c, want_c)
    np.testing.assert_allclose(got_r, want_r, atol=1e-6)
    assert len(tokens) >= 1000


def test_host_kind_goes_through_pure_callback_under_vmap():
    task = TASKS["countdown"]
    problems = make_split(task, num_per_level=4, seed=0)
    table = jax.tree.map(jnp.asarray, device_reward.make_table(task, problems))
    scorer = device_reward.host_scorer(task, problems, FORMAT_WEIGHT)
    answers = [p.answer for p in problems] + ["1+1", "__import__('os')"]
    rows = np.asarray(list(range(len(problems))) + [0, 0], np.int32)
    tokens = np.full((len(answers), completion_length(task)), tokenizer.PAD, np.int32)
    for r, a in enumerate(answers):
        ids = tokenizer.encode("".join(c for c in a if c in tokenizer.CHARS)) + [tokenizer.EOS]
        tokens[r, : len(ids)] = ids[: tokens.shape[1]]
    fn = jax.jit(
        jax.vmap(
            lambda t: device_reward.score(
                "host", t, table, jnp.asarray(rows), format_weight=FORMAT_WEIGHT, host=scorer
            )
        )
    )
    rewards, correct = fn(jnp.stack([jnp.asarray(tokens)] * 2))
    want_r, want_c = _host(task, problems, tokens, rows)
    for learner in range(2):
        np.testing.assert_array_equal(np.asarray(correct[learner]), want_c)
        np.testing.assert_allclose(np.asarray(rewards[learner]), want_r)
    assert want_c[: len(problems)].all() and not want_c[-1]


def test_unknown_kind_and_empty_table_are_refused():
    with pytest.raises(ValueError, match="empty problem list"):
        device_reward.make_table(TASKS["arithmetic"], [])
    with pytest.raises(ValueError, match="not computed on device"):
        device_reward.verdicts("host", jnp.zeros((1, 4), jnp.int32), None, jnp.zeros(1, jnp.int32))
