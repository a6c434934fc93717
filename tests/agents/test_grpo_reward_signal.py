"""Reward signals for reward-validity ablations: hand-computed groups, and every parsed signal
against the host verifier and parser on adversarial completions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.agents.grpo import presets, reward_signal
from rljax.lm.model import tokenizer
from rljax.lm.tasks import TASKS, device_reward, make_split, safe_verify
from rljax.lm.tasks.batches import completion_length
from rljax.lm.tasks.grammar import parse_int


def test_majority_labels_by_hand():
    key = jnp.asarray([[5, 7, 5, 0, 7, 5], [7, 5, 5, 7, 0, 0], [1, 2, 3, 4, 5, 6]])[..., None]
    ok = jnp.asarray([[1, 1, 1, 0, 1, 1], [1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0]], bool)
    got = np.asarray(reward_signal.majority_labels(key, ok))
    np.testing.assert_array_equal(got[0], [1, 0, 1, 0, 0, 1])  # 5 has 3 votes, 7 has 2
    np.testing.assert_array_equal(got[1], [1, 0, 0, 1, 0, 0])  # a 2-2 tie: the first sample's
    np.testing.assert_array_equal(got[2], [0] * 6)  # nothing parses: no pseudo-label


def _group(texts, finished, length):
    tokens = np.full((len(texts), length), tokenizer.PAD, np.int32)
    for i, (text, done) in enumerate(zip(texts, finished, strict=True)):
        ids = tokenizer.encode(text) + ([tokenizer.EOS] if done else [])
        tokens[i, : len(ids)] = ids[:length]
    return tokens


@pytest.mark.timeout(120)
def test_parsed_signals_match_the_host_parser():
    task = TASKS["arithmetic"]
    problems = make_split(task, num_per_level=4, seed=0)
    table = jax.tree.map(jnp.asarray, device_reward.make_table(task, problems))
    length, G = completion_length(task), 8
    rng = np.random.default_rng(0)
    groups, rows = [], []
    for i, p in enumerate(problems):
        final = p.answer.rsplit("=", 1)[-1]
        pool = [p.answer, final, p.answer + "1", "1=" + final, "=", "", "-" + final, "7", "7"]
        texts = [pool[j] for j in rng.integers(0, len(pool), G)]
        groups.append(_group(texts, rng.random(G) < 0.85, length))
        rows += [i] * G
    tokens = jnp.asarray(np.stack(groups))  # [B, G, A]
    B = tokens.shape[0]
    rewards, correct = device_reward.score(
        "final_int", tokens.reshape(B * G, -1), table, jnp.asarray(rows), format_weight=0.0
    )
    rewards, correct = rewards.reshape(B, G), correct.reshape(B, G)
    out = {}
    for name in presets.REWARDS:
        code = jnp.asarray(presets.REWARDS.index(name))
        sig = jax.jit(reward_signal.signal, static_argnums=1)
        out[name] = [np.asarray(x) for x in sig(code, "final_int", tokens, rewards, correct,
                                                jax.random.key(1))]  # fmt: skip
    host = {"inverted": [], "format_only": [], "majority": [], "verifier": []}
    for b in range(B):
        answers, done = [], []
        for g in range(G):
            text, finished = tokenizer.decode(np.asarray(tokens[b, g]))
            value = parse_int(text.rsplit("=", 1)[-1])
            answers.append(value)
            done.append(finished)
            right = finished and safe_verify(task, problems[b], text).correct
            host["verifier"].append(float(right))
            host["format_only"].append(float(finished and value is not None))
            host["inverted"].append(float(finished and value is not None and not right))
        votes = [sum(a is not None and a == v for a in answers) if v is not None else 0
                 for v in answers]  # fmt: skip
        top = int(np.argmax(votes))
        host["majority"].extend(
            float(done[g] and votes[top] > 0 and answers[g] == answers[top]) for g in range(G)
        )
    for name, expected in host.items():
        np.testing.assert_array_equal(out[name][0].reshape(-1), expected, err_msg=name)
        np.testing.assert_array_equal(out[name][1].reshape(-1), expected, err_msg=name)
    assert 0 < np.mean(host["majority"]) < 1 and 0 < np.mean(host["inverted"]) < 1
    np.testing.assert_array_equal(out["none"][0], 0.0)
    coin = out["random"][0]
    assert set(np.unique(coin)) <= {0.0, 1.0} and 0.3 < coin.mean() < 0.7
    np.testing.assert_array_equal(out["random"][1], coin)
