"""The toy tasks and math behind one interface: the `Tokenizer` protocol, the one pair of batch
encoders (`tokenizer.encode_prompts` / `encode_completions`), the one problem table
(`device_reward.make_table`) and the one held-out evaluator (`rollout.evaluate_policy`), each
checked against ids and pass@k worked out by hand."""

import jax
import numpy as np
import pytest

from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.hf.tokenizer import HFTokenizer
from rljax.lm.tasks import TASKS, Problem, batches, device_reward, math_answers, math_task, rollout

FIXTURE = "tests/lm/fixtures/hf/tokenizer"  # tokenizer.json with a BOS post-processor
ARITHMETIC = TASKS["arithmetic"]


def test_every_tokenizer_has_the_protocol():
    hf = HFTokenizer.from_dir(FIXTURE)
    for tok in (tokenizer.CHAR, tokenizer.ByteTokenizer(), hf):
        assert isinstance(tok, tokenizer.Tokenizer)
        assert tok.eos_id == tok.eos_ids[0]
        tokenizer.check_tokenizer(tok)
        text, finished = tok.decode([*tok.encode("3+4="), tok.eos_id, tok.pad_id])
        assert (text, finished) == ("3+4=", True)
    assert not isinstance(object(), tokenizer.Tokenizer)
    assert (hf.bos_id, hf.bos_token) == (4, "<|bos|>")


def test_toy_prompts_are_bos_and_characters_left_padded():
    # "3+4=": digits are ids 3..12, "+" 13, "=" 19 (CHARS after PAD, BOS, EOS).
    tokens, mask = tokenizer.encode_prompts(["3+4=", "9="], 7)
    np.testing.assert_array_equal(tokens, [[0, 0, 1, 6, 13, 7, 19], [0, 0, 0, 0, 1, 12, 19]])
    np.testing.assert_array_equal(mask, [[0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1]])
    problems = [Problem("3+4=", "7", 1), Problem("9=", "9", 1)]
    toy = batches.encode_prompts(ARITHMETIC, problems)
    length = batches.prompt_length(ARITHMETIC)
    assert toy[0].shape == (2, length)
    np.testing.assert_array_equal(toy[0][:, -7:], tokens)
    assert (toy[0][:, :-7] == tokenizer.PAD).all()


def test_math_prompts_are_bos_and_the_rendered_bytes():
    # "Hi\nAnswer: " as bytes + 3: H 75, i 108, \n 13, A 68, n 113, s 118, w 122, e 104, r 117,
    # : 61, space 35; BOS (1) first.
    tok = tokenizer.ByteTokenizer()
    tokens, mask = tokenizer.encode_prompts(["Hi"], 13, tok, math_task.PLAIN)
    want = [0, 1, 75, 108, 13, 68, 113, 118, 122, 104, 117, 61, 35]
    np.testing.assert_array_equal(tokens, [want])
    np.testing.assert_array_equal(mask, [[0] + [1] * 12])
    with pytest.raises(ValueError, match=r"prompt 0 \('Hi'\) needs 12 tokens > prompt length 11"):
        tokenizer.encode_prompts(["Hi"], 11, tok, math_task.PLAIN)


def test_hf_prompts_equal_the_post_processors_and_chat_prompts_add_no_bos():
    """The toy tasks encoded a tokenizer.json's prompts with its post-processor (which puts
    <|bos|> first); the protocol puts `bos_id` first: the same ids. A chat template's text
    carries its own markers, so no BOS is added to it."""
    hf = HFTokenizer.from_dir(FIXTURE)
    texts = ["3+4=", "12*(3-1)=", "héllo wörld"]
    tokens, mask = tokenizer.encode_prompts(texts, 24, hf)
    for row, text in enumerate(texts):
        before = hf.tokenizer.encode(text, add_special_tokens=True).ids
        assert before[0] == hf.bos_id
        assert tokens[row][mask[row] == 1].tolist() == before
        assert (tokens[row][mask[row] == 0] == hf.pad_id).all()
    chat = tokenizer.ChatTemplate(hf)
    tokens, mask = tokenizer.encode_prompts(["What is 3+4?"], 64, hf, chat)
    rendered = hf.apply_chat_template([{"role": "user", "content": "What is 3+4?"}])
    assert tokens[0][mask[0] == 1].tolist() == hf.encode(rendered)


def test_completions_end_in_eos_and_math_truncates_to_the_budget():
    tokens, mask = tokenizer.encode_completions(["7", "12"], 4)
    np.testing.assert_array_equal(tokens, [[10, 2, 0, 0], [4, 5, 2, 0]])
    np.testing.assert_array_equal(mask, [[1, 1, 0, 0], [1, 1, 1, 0]])
    with pytest.raises(ValueError, match=r"completion 1 \('12'\) needs 3 tokens > completion"):
        tokenizer.encode_completions(["7", "12"], 2)
    # Math's SFT target "#### 7" + EOS in bytes: '#' 38, ' ' 35, '7' 58, EOS 2; cut to 4 ids.
    tok = tokenizer.ByteTokenizer()
    text = math_task.completion(Problem("q", "7", 0))
    full, _ = tokenizer.encode_completions([text], 8, tok)
    np.testing.assert_array_equal(full, [[38, 38, 38, 38, 35, 58, 2, 0]])
    cut, cut_mask = tokenizer.encode_completions([text], 4, tok, truncate=True)
    np.testing.assert_array_equal(cut, [[38, 38, 38, 38]])
    assert cut_mask.all()


def test_toy_rows_keep_their_device_targets_and_math_rows_have_none():
    problems = [Problem("3+4*2=", "3+8=11", 2), Problem("9-1=", "8", 1)]
    toy = device_reward.make_table(ARITHMETIC, problems)
    np.testing.assert_array_equal(toy.target_int, [11, 8])  # the value of the prompt
    assert toy.target_tokens.shape == (2, batches.completion_length(ARITHMETIC))
    np.testing.assert_array_equal(toy.level, [2, 1])
    np.testing.assert_array_equal(toy.index, [0, 1])
    np.testing.assert_array_equal(
        toy.prompt_tokens, batches.encode_prompts(ARITHMETIC, problems)[0]
    )
    strings = TASKS["strings"]
    word = [strings.generate(np.random.default_rng(0), 1)]
    exact = device_reward.make_table(strings, word)
    answer = tokenizer.encode(word[0].answer)
    np.testing.assert_array_equal(exact.target_tokens[0, : len(answer) + 1], [*answer, 0])
    assert exact.target_len.tolist() == [len(answer)]

    tok = tokenizer.ByteTokenizer()
    questions = [Problem("Is 2 > 1?", "1", 3), Problem("1+1?", "2", 1), Problem("0?", "0", 2)]
    table = device_reward.make_table(
        None, questions, tok, template=math_task.PLAIN, prompt_length=24
    )
    want = tokenizer.encode_prompts([p.prompt for p in questions], 24, tok, math_task.PLAIN)
    np.testing.assert_array_equal(table.prompt_tokens, want[0])
    np.testing.assert_array_equal(table.prompt_mask, want[1])
    np.testing.assert_array_equal(table.level, [3, 1, 2])
    np.testing.assert_array_equal(table.index, [0, 1, 2])
    assert table.target_tokens.shape == (3, 1)
    assert not table.target_int.any() and not table.target_tokens.any()
    assert not table.target_len.any()
    with pytest.raises(ValueError, match="needs its prompt_length"):
        device_reward.make_table(None, questions, tok)
    with pytest.raises(ValueError, match="^an empty problem list"):
        device_reward.make_table(None, [], tok, prompt_length=24)


def _canned(texts_by_row, tok, length=6):
    """A sampler that answers row r of every call with `texts_by_row[r]` (None: no EOS)."""
    calls = []

    def sample_fn(tokens, mask, start):
        calls.append((tokens.shape, start))
        out = np.full((len(tokens), length), tok.pad_id, np.int32)
        for r in range(len(tokens)):
            text = texts_by_row[start * 2 + r]
            ids = tok.encode(text or "5")[:length] + ([tok.eos_id] if text is not None else [])
            out[r, : len(ids)] = ids[:length]
        return out

    return sample_fn, calls


def test_evaluator_counts_what_the_verifier_accepts_of_the_finished_samples():
    """3 problems x n = 2: samples "7","7" | "1", unfinished "5" | "0","2". A stub verifier that
    accepts "7" and "2" gives correct [[1, 1], [0, 0], [0, 1]]: pass@1 = 1/2, pass@2 = 2/3, and
    an unfinished sample is wrong whatever its text."""
    problems = [Problem("a", "x", 1), Problem("b", "y", 2), Problem("c", "z", 2)]
    texts = ["7", "7", "1", None, "0", "2"]
    seen = []

    def verify(owners, answers):
        seen.extend(zip([p.prompt for p in owners], answers, strict=True))
        return [a in ("7", "2") for a in answers]

    prompts = tokenizer.encode_prompts(["a", "b", "c"], 3)
    for batch in (0, 1):  # every problem at once, and one problem per call
        seen.clear()
        sample_fn, calls = _canned(texts, tokenizer.CHAR)
        s = rollout.evaluate_policy(
            sample_fn, verify, tokenizer.CHAR, problems, *prompts, num_samples=2,
            batch_problems=batch,
        )  # fmt: skip
        assert s["pass@1"] == pytest.approx(0.5) and s["pass@2"] == pytest.approx(2 / 3)
        assert s["pass@1_by_level"] == {1: 1.0, 2: 0.25}
        assert s["distinct_correct_per_problem"] == pytest.approx((1 + 0 + 1) / 3)
        assert seen == [(p, "5" if t is None else t) for p, t in zip("aabbcc", texts, strict=True)]
        assert calls == ([((6, 3), 0)] if batch == 0 else [((2, 3), s) for s in (0, 1, 2)])


def test_evaluator_returns_none_where_the_sampler_does_not_judge():
    prompts = tokenizer.encode_prompts(["a"], 2)
    out = rollout.evaluate_policy(
        lambda t, m, s: None, None, tokenizer.CHAR, [Problem("a", "x", 1)], *prompts,
        num_samples=2,
    )  # fmt: skip
    assert out is None


class _StubChecker:
    """`Checker.judge`'s interface: answers extracted here, exact string equality, every call's
    `(reference, answer)` pairs recorded."""

    def __init__(self):
        self.calls = []

    def judge(self, references, texts, modes):
        answers = [math_answers.extract(text, modes) for text in texts]
        self.calls.append(list(zip(references, answers, strict=True)))
        return [a is not None and a == r for r, a in zip(references, answers, strict=True)], answers


def test_math_verifier_judges_extracted_answers_in_one_check():
    tok = tokenizer.ByteTokenizer()
    problems = [Problem("q0", "7", 1), Problem("q1", "12", 1)]
    texts = ["#### 7", "it is 8", "#### 12", None]  # None: no EOS ("5" without a stop)
    checker = _StubChecker()
    prompts = tokenizer.encode_prompts(["q0", "q1"], 12, tok, math_task.PLAIN)
    sample_fn, _ = _canned(texts, tok, length=10)
    s = rollout.evaluate_policy(
        sample_fn, math_task.verifier(checker), tok, problems, *prompts, num_samples=2
    )
    assert checker.calls == [[("7", "7"), ("7", "8"), ("12", "12"), ("12", "5")]]
    assert s["pass_at_k"]["pass"] == [pytest.approx(0.5), pytest.approx(1.0)]


def test_toy_evaluate_is_the_one_evaluator_on_a_tiny_model():
    """`rollout.evaluate` on a random tiny model equals `evaluate_policy` fed the same samples:
    a stub verifier accepting every text makes pass@1 the share of samples that ended."""
    task = ARITHMETIC
    cfg = TransformerConfig(
        d_model=16, n_layers=1, n_heads=2, d_ff=32,
        max_len=batches.prompt_length(task) + batches.completion_length(task),
    )  # fmt: skip
    params = init_params(cfg, jax.random.key(0))
    problems = [Problem("3+4=", "7", 1), Problem("9-1=", "8", 1), Problem("2*3=", "6", 2)]
    key = jax.random.key(3)
    settings = dict(num_samples=4, temperature=1.0, top_p=1.0, batch_problems=2)
    got = rollout.evaluate(params, cfg, task, problems, key, **settings)
    tokens, mask = batches.encode_prompts(task, problems)
    finished = []
    for start in (0, 2):
        out = rollout.sample_jit(
            params, cfg, np.repeat(tokens[start : start + 2], 4, axis=0),
            np.repeat(mask[start : start + 2], 4, axis=0), jax.random.fold_in(key, start),
            max_new_tokens=batches.completion_length(task), temperature=1.0, top_p=1.0,
        )  # fmt: skip
        finished += [tokenizer.decode(row)[1] for row in np.asarray(out.tokens)]
    assert 0 < sum(finished) < len(finished)  # the random model ends some samples only

    def accept(owners, texts):
        return [True] * len(texts)

    def sample_fn(t, m, start):
        return np.asarray(
            rollout.sample_jit(
                params, cfg, t, m, jax.random.fold_in(key, start),
                max_new_tokens=batches.completion_length(task), temperature=1.0, top_p=1.0,
            ).tokens
        )  # fmt: skip

    stub = rollout.evaluate_policy(
        sample_fn, accept, tokenizer.CHAR, problems, tokens, mask, num_samples=4,
        batch_problems=2,
    )  # fmt: skip
    assert stub["pass@1"] == pytest.approx(np.mean(finished))
    wrong = rollout.task_verifier(task)(problems, ["7", "7", "6"])
    assert wrong == [True, False, True]
    assert 0 <= got["pass@1"] <= stub["pass@1"]  # the task's verifier accepts fewer
