"""SELF-style curation: RL trains only on the problems whose reference solution the base finds
least likely; the selection is checked against a one-problem-at-a-time NumPy computation. 1-shot
RLVR's selection: per-problem training accuracy of a step and the variance ranking, by hand."""

import dataclasses
import re

import jax
import numpy as np
import pytest

from configs import grpo as grpo_config
from rljax.agents.grpo import groups
from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, forward, init_params
from rljax.lm.tasks import TASKS, make_split, selection
from rljax.lm.tasks.batches import completion_length, encode_problems, prompt_length
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
        ({"least_likely": 0.5, "train_problems": 4}, "least_likely=0.5, train_problems=4"),
        ({"train_problems": 4, "train_examples": (1,)}, "train_problems=4, train_examples=(1,)"),
        ({"train_examples": (3, 3)}, "train_examples=(3, 3) is invalid; allowed: distinct"),
        ({"train_examples": (-1,)}, "train_examples=(-1,) is invalid"),
        ({"train_examples": (True,)}, "train_examples=(True,) is invalid"),
        ({"log_problems": -1}, "log_problems=-1 is invalid; allowed: an integer >= 0"),
    ],
)
def test_bad_selection_fails_before_anything_is_built(tmp_path, changes, message):
    run = lm_experiment.from_config(grpo_config.get_config("arithmetic,tiny"), str(tmp_path / "x"))
    run = dataclasses.replace(run, **changes)
    with pytest.raises(ValueError, match=re.escape(message)):
        lm_experiment.validate(run)


def test_problem_accuracy_is_each_problems_mean_verdict_in_the_step():
    # B = 4 groups of G = 2 on problems 2, 0, 2, 3 of a table of 5 (problem 1 and 4 not drawn)
    problem = np.asarray([2, 0, 2, 3])
    verified = np.asarray([1, 1, 0, 1, 1, 0, 0, 0], np.float32)  # group means 1, ½, ½, 0
    got = {k: float(v) for k, v in groups.problem_accuracy(problem, verified, 5).items()}
    assert list(got) == [f"{groups.PROBLEM_KEY}{i}" for i in range(5)]
    # problem 2 twice in one step: one visit of accuracy (1 + 0 + 1 + 1) / 4
    want = [0.5, np.nan, 0.75, 0.0, np.nan]
    np.testing.assert_allclose(list(got.values()), want)
    assert len(groups.problem_accuracy(problem, verified, 2)) == 2  # only the first n reported


def test_by_variance_ranks_pooled_visits_with_ties_to_the_lower_index():
    nan = np.nan
    # [learners 2, updates 3, problems 5]
    acc = np.asarray(
        [
            [[0.0, 1.0, 0.5, nan, 0.25], [1.0, 1.0, 0.5, 0.0, nan], [nan, 1.0, nan, nan, nan]],
            [[1.0, nan, 0.5, nan, 0.75], [0.0, 1.0, nan, nan, nan], [nan, 1.0, 0.5, nan, nan]],
        ]
    )
    order, var, visits = selection.by_variance(acc)
    # problem 0: 0, 1, 1, 0 -> var 1/4; 1: all 1 -> 0; 2: all ½ -> 0; 3: one visit; 4: ¼, ¾ -> 1/16
    np.testing.assert_allclose(var, [0.25, 0.0, 0.0, nan, 0.0625])
    assert visits.tolist() == [4, 5, 4, 1, 2]
    assert order.tolist() == [0, 4, 1, 2]  # 3 unranked; 1 and 2 tie, the lower index first
    assert selection.by_variance(acc, min_visits=3)[0].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="min_visits=1 is invalid"):
        selection.by_variance(acc, min_visits=1)
