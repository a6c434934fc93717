"""SELF-style curation: RL trains only on the problems whose reference solution the base finds
least likely; the selection is checked against a one-problem-at-a-time NumPy computation."""

import dataclasses

import jax
import numpy as np
import pytest

from configs import grpo as grpo_config
from rljax.lm import selection, tokenizer
from rljax.lm.data import completion_length, encode_problems, prompt_length
from rljax.lm.model import TransformerConfig, forward, init_params
from rljax.lm.tasks import TASKS, make_split
from rljax.train import lm_experiment

TASK = TASKS["arithmetic"]
MODEL = TransformerConfig(
    d_model=32,
    n_layers=1,
    n_heads=2,
    d_ff=64,
    max_len=prompt_length(TASK) + completion_length(TASK),
)


def _loglik_one(params, problem) -> float:
    """log π(answer | prompt) of one unpadded problem: log-softmax of the logits, token by token."""
    prompt = [tokenizer.BOS] + tokenizer.encode(problem.prompt)
    answer = tokenizer.encode(problem.answer) + [tokenizer.EOS]
    tokens = np.asarray([prompt + answer])
    n = tokens.shape[1]
    causal = np.tril(np.ones((1, n, n), bool))
    logits, _ = forward(params, MODEL, tokens, np.arange(n)[None], causal)
    z = np.asarray(logits[0], np.float64)
    z = z - z.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(sum(log_probs[len(prompt) - 1 + a, t] for a, t in enumerate(answer)))


@pytest.mark.slow  # over 15 s on the 2-core CPU (fast tier <= 10 min)
def test_least_likely_keeps_the_lowest_likelihood_problems_in_order():
    problems = make_split(TASK, num_per_level=8, seed=3)[:20]
    params = init_params(MODEL, jax.random.key(1))
    got = selection.reference_log_likelihood(params, MODEL, TASK, problems)
    want = np.asarray([_loglik_one(params, p) for p in problems])
    np.testing.assert_allclose(got, want, rtol=2e-4)
    kept = selection.least_likely(params, MODEL, TASK, problems, 0.25)
    lowest = set(np.argsort(want)[:5].tolist())
    assert [problems.index(p) for p in kept] == sorted(lowest)  # 5 = ceil(0.25 x 20), in order
    assert len(selection.least_likely(params, MODEL, TASK, problems, 0.01)) == 1


def test_encoded_batch_matches_the_unpadded_reference_layout():
    """The padded batch the selection scores holds the same prompt and answer tokens."""
    (problem,) = make_split(TASK, num_per_level=1, seed=0)[:1]
    batch = encode_problems(TASK, [problem])
    prompt = np.asarray(batch.prompt_tokens[0])[np.asarray(batch.prompt_mask[0]) > 0]
    answer = np.asarray(batch.completion_tokens[0])[np.asarray(batch.completion_mask[0]) > 0]
    assert prompt.tolist() == [tokenizer.BOS] + tokenizer.encode(problem.prompt)
    assert answer.tolist() == tokenizer.encode(problem.answer) + [tokenizer.EOS]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"least_likely": 1.0}, "least_likely=1.0 is invalid; allowed: a fraction in [0, 1)"),
        ({"least_likely": -0.1}, "least_likely=-0.1 is invalid"),
        ({"least_likely": True}, "least_likely=True is invalid"),
        ({"least_likely": 0.5, "train_problems": 4}, "least_likely=0.5 with train_problems=4"),
    ],
)
def test_bad_selection_fails_before_anything_is_built(tmp_path, changes, message):
    run = lm_experiment.from_config(grpo_config.get_config("arithmetic,tiny"), str(tmp_path / "x"))
    run = dataclasses.replace(run, **changes)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace(")", r"\)")):
        lm_experiment.validate(run)
