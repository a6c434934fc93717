"""The toy tasks under a BPE tokenizer (`--config.model.tokenizer`): encoding, host rewards, the
model config it implies, and the character tokenizer's ids and cache keys left as they were."""

import json
import os

import numpy as np
import pytest

from rljax.agents import sft
from rljax.lm.model import pretrained, tokenizer
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.hf.tokenizer import HFTokenizer, train_bpe
from rljax.lm.tasks import TASKS, Problem, batches, device_reward, make_split
from rljax.train import lm_base

TASK = TASKS["arithmetic"]
SPECIALS = ("<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>")


def _problems(num_per_level: int, seed: int = 0) -> list[Problem]:
    return make_split(TASK, num_per_level=num_per_level, seed=seed)


def write_bpe(path: str, problems: list[Problem], vocab_size: int = 300) -> HFTokenizer:
    """A byte-level BPE tokenizer trained on `problems` (as scripts/train_bpe_tokenizer.py)."""
    tok = train_bpe(
        [p.prompt for p in problems] + [p.answer for p in problems], vocab_size, SPECIALS
    )
    os.makedirs(path, exist_ok=True)
    tok.save(os.path.join(path, "tokenizer.json"))
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "<|endoftext|>", "pad_token": "<|pad|>"}, f)
    return HFTokenizer.from_dir(path)


@pytest.fixture(scope="module")
def bpe(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bpe"))
    return path, write_bpe(path, _problems(60))


def test_char_tokenizer_object_gives_the_modules_ids():
    problems = _problems(4)
    tokens, mask = tokenizer.encode_prompts([p.prompt for p in problems], 40)
    batch = batches.encode_problems(TASK, problems)
    np.testing.assert_array_equal(batch.prompt_tokens, batches.encode_prompts(TASK, problems)[0])
    assert batch.prompt_tokens.shape == (len(problems), batches.prompt_length(TASK))
    texts = [p.prompt for p in problems]
    np.testing.assert_array_equal(tokenizer.encode_prompts(texts, 40, tokenizer.CHAR)[0], tokens)
    np.testing.assert_array_equal(tokenizer.encode_prompts(texts, 40, tokenizer.CHAR)[1], mask)
    assert [tokenizer.CHAR.encode(t) for t in texts] == [tokenizer.encode(t) for t in texts]
    assert tokenizer.CHAR.decode(batch.completion_tokens[0]) == (problems[0].answer, True)
    assert device_reward.reward_kind("arithmetic") == "final_int"


def test_sft_cache_key_of_the_character_tokenizer_is_unchanged():
    """The key of this base, computed by the code before tokenizers were pluggable."""
    problems = [Problem("3+4=", "7", 1), Problem("12-5=", "7", 2)]
    key = lm_base.cache_key(TransformerConfig(), sft.SFTConfig(), TASK, problems)
    assert key == "cf4f7a08c7d9017e"
    assert (
        lm_base.cache_key(TransformerConfig(), sft.SFTConfig(), TASK, problems, tokenizer.CHAR)
        == key
    )


def test_bpe_changes_the_cache_key(bpe):
    _, tok = bpe
    problems = [Problem("3+4=", "7", 1)]
    args = (TransformerConfig(), sft.SFTConfig(), TASK, problems)
    assert lm_base.cache_key(*args, tok) != lm_base.cache_key(*args)


def test_bpe_encodes_prompts_and_targets_that_decode_back(bpe):
    _, tok = bpe
    problems = _problems(12, seed=1)  # not the tokenizer's corpus
    batch = batches.encode_problems(TASK, problems, tok)
    assert batch.prompt_tokens.shape == (len(problems), batches.prompt_length(TASK))
    assert batch.completion_tokens.shape == (len(problems), batches.completion_length(TASK))
    # merges make the answers shorter than their characters
    assert batch.completion_mask.sum() < sum(len(p.answer) + 1 for p in problems)
    for row, problem in enumerate(problems):
        prompt = batch.prompt_tokens[row][batch.prompt_mask[row] == 1]
        assert tok.tokenizer.decode(prompt.tolist()) == problem.prompt
        assert tok.decode(batch.completion_tokens[row]) == (problem.answer, True)
    assert int(batch.completion_tokens[0, batch.completion_mask[0].sum() - 1]) == tok.eos_id


def test_bpe_rewards_on_the_host_agree_with_the_character_rewards(bpe):
    """Same texts, two tokenizers: the host scorer under BPE (through `score`'s pure_callback)
    gives the character tokenizer's rewards (whose device parsers agree with the host:
    test_lm_device_reward.py), on right, corrupted, bare and unfinished answers."""
    _, tok = bpe
    problems = _problems(10, seed=2)
    rng = np.random.default_rng(0)
    texts = [p.answer if i % 3 == 0 else sft.corrupt(p.answer, rng) for i, p in enumerate(problems)]
    texts[1] = problems[1].answer.rsplit("=", 1)[-1]  # the bare final value: also correct
    length = batches.completion_length(TASK)
    char_tokens, _ = tokenizer.encode_completions(texts, length)
    bpe_tokens, _ = tokenizer.encode_completions(texts, length, tok)
    char_tokens[5, :] = tokenizer.encode("1")[0]  # unfinished: no EOS
    bpe_tokens[5, :] = tok.encode("1", add_special_tokens=False)[0]
    index = np.arange(len(problems), dtype=np.int32)
    want = device_reward.host_scorer(TASK, problems, 0.1)(char_tokens, index)
    assert device_reward.reward_kind("arithmetic", tok) == "host"
    scorer = device_reward.host_scorer(TASK, problems, 0.1, tok)
    bpe_table = device_reward.make_table(TASK, problems, tok)
    got = device_reward.score("host", bpe_tokens, bpe_table, index, format_weight=0.1, host=scorer)
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]))
    assert 0 < np.asarray(want[1]).sum() < len(problems)


def test_model_config_takes_the_tokenizers_ids(bpe, tmp_path):
    path, tok = bpe
    cfg = pretrained.model_config({"d_model": 32, "family": "qwen2", "path": "", "tokenizer": path})
    assert (cfg.vocab_size, cfg.eos_ids, cfg.pad_id) == (tok.vocab_size, tok.eos_ids, tok.pad_id)
    assert pretrained.model_config({"d_model": 32, "path": "", "tokenizer": ""}).vocab_size == 64
    with pytest.raises(ValueError, match=f"model.tokenizer='{tmp_path}' has no tokenizer.json"):
        pretrained.tokenizer({"tokenizer": str(tmp_path)})
