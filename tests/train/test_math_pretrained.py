"""Math RLVR from a checkpoint folder: the model / tokenizer / chat_template fields' errors, prompts
through a BPE tokenizer's chat template, and the entry point on a tiny Qwen2-layout checkpoint
with its tokenizer.json (both built here)."""

import dataclasses
import json
import os

import numpy as np
import pytest
from test_math_rlvr import write_sample  # the GSM8K-layout sample rows, written the same way

from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.hf import checkpoint
from rljax.lm.model.hf.tokenizer import HFTokenizer, train_bpe
from rljax.lm.tasks import Problem, device_reward, math_task
from rljax.parallel import mesh as mesh_lib
from rljax.train import math_base, math_experiment, population

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECIALS = ("<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "<|im_start|>user\n{{ messages[0].content }}<|im_end|>\n"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def write_tokenizer(folder, *, chat_template=CHAT_TEMPLATE) -> HFTokenizer:
    """A byte-level BPE tokenizer.json (300 ids) trained on GSM8K-like texts, and its config."""
    texts = [
        f"Tom has {a} apples and finds {b} more. How many now? {a} + {b} = {a + b}\n#### {a + b}"
        for a in range(20)
        for b in range(20)
    ]
    os.makedirs(folder, exist_ok=True)
    train_bpe(texts, 300, SPECIALS).save(os.path.join(folder, "tokenizer.json"))
    conf = {"eos_token": "<|im_end|>", "pad_token": "<|pad|>", "bos_token": None}
    if chat_template is not None:
        conf["chat_template"] = chat_template
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(conf, f)
    return HFTokenizer.from_dir(str(folder))


def random_params(cfg: TransformerConfig, seed: int = 0) -> dict:
    """NumPy parameters at `cfg`'s shapes (norm scales 1, the rest N(0, 0.02^2)): a checkpoint
    without running flax's initializer op by op (seconds on a loaded 2-core CPU)."""
    rng = np.random.default_rng(seed)
    params: dict = {}
    for path, x in checkpoint.expected_shapes(cfg).items():
        *parents, name = path.split("/")
        node = params
        for parent in parents:
            node = node.setdefault(parent, {})
        normal = (0.02 * rng.standard_normal(x.shape)).astype(np.float32)
        node[name] = np.ones(x.shape, np.float32) if name == "scale" else normal
    return params


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory):
    """A random Qwen2-layout checkpoint (d_model 32, 1 layer) whose vocabulary covers the
    tokenizer's with 4 spare ids, and the tokenizer beside it."""
    folder = tmp_path_factory.mktemp("qwen_tiny")
    tok = write_tokenizer(folder)
    cfg = TransformerConfig(
        vocab_size=tok.vocab_size + 4, d_model=32, n_layers=1, n_heads=4, d_ff=64, max_len=128,
        family="qwen2", n_kv_heads=2, tie_embeddings=True, eos_ids=tok.eos_ids, pad_id=tok.pad_id,
    )  # fmt: skip
    checkpoint.save(str(folder), random_params(cfg), cfg)
    return str(folder)


def test_validate_names_the_model_tokenizer_and_chat_template_fields(tmp_path, checkpoint_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    no_weights = tmp_path / "no_weights"
    no_weights.mkdir()
    with open(os.path.join(checkpoint_dir, "config.json")) as f:
        hf = json.load(f)
    (no_weights / "config.json").write_text(json.dumps(hf))
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    (gpt2 / "config.json").write_text(json.dumps({**hf, "architectures": ["GPT2LMHeadModel"]}))
    (gpt2 / "model.safetensors").write_text("")
    plain_tok = tmp_path / "plain_tok"
    write_tokenizer(plain_tok, chat_template=None)
    run = math_experiment.MathRunConfig("none.jsonl", "none.jsonl", str(tmp_path))
    for change, message in [
        (dict(model=str(empty)), f"model='{empty}' has no config.json; allowed: 'tiny' or"),
        (dict(model=str(no_weights)), "has neither model.safetensors nor model.safetensors.index"),
        (
            dict(model=str(gpt2)),
            r"model='.*gpt2': .*gpt2/config.json architectures=\['GPT2LMHeadModel'",
        ),
        (
            dict(tokenizer=str(empty)),
            f"tokenizer='{empty}' has no tokenizer.json; allowed: 'bytes'",
        ),
        (dict(chat_template="chatml"), "chat_template='chatml' is unknown; allowed: plain, model"),
        (dict(chat_template="model"), "chat_template='model' but tokenizer='bytes' has no chat"),
        (
            dict(model=checkpoint_dir, tokenizer=str(plain_tok), chat_template="model"),
            f"tokenizer='{plain_tok}' has no chat template",
        ),
    ]:
        bad = math_experiment.MathRunConfig(**{**run.__dict__, **change})
        with pytest.raises(ValueError, match=message):
            math_experiment.validate(bad)
    # The tokenizer defaults to the model folder; the tiny model's to bytes.
    assert math_base.tokenizer_dir(run) == "bytes"
    good = math_experiment.MathRunConfig(**{**run.__dict__, "model": checkpoint_dir})
    assert math_base.tokenizer_dir(good) == checkpoint_dir
    math_experiment.validate(dataclasses.replace(good, chat_template="model"))
    math_experiment.validate(dataclasses.replace(good, tokenizer=str(plain_tok)))


def test_model_config_takes_the_tokenizers_ids_and_refuses_a_larger_vocabulary(checkpoint_dir):
    run = math_experiment.MathRunConfig("none.jsonl", "none.jsonl", "none", model=checkpoint_dir)
    tok, template = math_base.load_tokenizer(dataclasses.replace(run, chat_template="model"))
    assert isinstance(template, tokenizer.ChatTemplate) and isinstance(tok, HFTokenizer)
    model = math_base.model_config(run, tok)
    assert (model.family, model.d_model, model.max_len) == ("qwen2", 32, 96 + 8)
    assert (model.eos_ids, model.pad_id) == (tok.eos_ids, tok.pad_id)
    assert model.vocab_size == tok.vocab_size + 4
    small = TransformerConfig(vocab_size=64)
    with pytest.raises(ValueError, match="tokenizer vocab_size=264 > the model's vocab_size=64"):
        tokenizer.check_tokenizer(tokenizer.ByteTokenizer(), small)
    other = TransformerConfig(vocab_size=400, eos_ids=(2,), pad_id=0)
    with pytest.raises(ValueError, match=r"the sampler needs the tokenizer's eos_ids=\(\d+,\)"):
        tokenizer.check_tokenizer(tok, other)


def test_chat_template_prompts_carry_the_markers_and_no_added_bos(tmp_path):
    hf = write_tokenizer(tmp_path / "tok")
    problems = [Problem("Tom has 3 apples and finds 4 more. How many now?", "7", 0)]
    chat = tokenizer.ChatTemplate(hf)
    table = device_reward.make_table(None, problems, hf, template=chat, prompt_length=64)
    ids = table.prompt_tokens[0][table.prompt_mask[0] == 1].tolist()
    text = hf.tokenizer.decode(ids, skip_special_tokens=False)
    assert text == f"<|im_start|>user\n{problems[0].prompt}<|im_end|>\n<|im_start|>assistant\n"
    assert ids[0] == hf.tokenizer.token_to_id("<|im_start|>")  # no BOS (the tokenizer has none)
    assert (table.prompt_tokens[0][table.prompt_mask[0] == 0] == hf.pad_id).all()
    plain = device_reward.make_table(None, problems, hf, template=math_task.PLAIN, prompt_length=64)
    plain_ids = plain.prompt_tokens[0][plain.prompt_mask[0] == 1].tolist()
    assert plain_ids == hf.encode(f"{problems[0].prompt}\nAnswer: ", add_special_tokens=False)
    # Completions decode up to the first stop id, as the scorer reads them.
    completion = [*hf.encode("#### 7", add_special_tokens=False), hf.eos_id, hf.pad_id]
    assert hf.decode(np.asarray(completion)) == ("#### 7", True)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_entry_point_trains_grpo_from_a_checkpoint_with_its_chat_template(
    load_entry, checkpoint_dir, tmp_path, monkeypatch
):
    """`--config.model.path=DIR --config.model.tokenizer=DIR --config.model.chat_template=model`
    on the tiny preset: 2 GRPO steps of 2 learners from the checkpoint's parameters, rewards
    from the checker inside the jitted step, pass@k on the held-out file."""
    pairs = [(a, b) for a in range(10) for b in range(10) if a + b < 10]
    test = write_sample(tmp_path / "test.jsonl", pairs[::6])
    train = write_sample(tmp_path / "train.jsonl", [p for p in pairs if p not in pairs[::6]])
    tables = []
    make_table = device_reward.make_table

    def spy(task, problems, tok, **prompts):
        tables.append(make_table(task, problems, tok, **prompts))
        return tables[-1]

    monkeypatch.setattr(device_reward, "make_table", spy)
    entry = load_entry("experiments/train_math.py")
    argv = ["train_math.py", "--config=configs/grpo_math.py:gsm8k,tiny"]
    argv += [f"--config.data.train_path={train}", f"--config.data.test_path={test}"]
    argv += [f"--config.model.path={checkpoint_dir}", f"--config.model.tokenizer={checkpoint_dir}"]
    argv += ["--config.model.chat_template=model", "--config.sft.steps=0", "--config.run.steps=2"]
    argv += [
        "--config.run.prompts_per_step=2",
        "--config.run.group_size=2",
        "--config.sweep.preset=grpo,dr_grpo",
    ]
    argv += [
        "--config.eval.num_problems=4",
        "--config.eval.num_samples=2",
        f"--workdir={tmp_path}/run",
    ]
    monkeypatch.chdir(ROOT)  # the config path is relative to the repository
    assert entry.main(argv) == 0
    with open(tmp_path / "run" / "results.json") as f:
        results = json.load(f)
    assert results["config"]["chat_template"] == "model"
    assert sorted(results["learners"]) == ["dr_grpo/seed0", "grpo/seed0"]
    for summary in results["learners"].values():
        assert summary["num_problems"] == 4 and summary["num_samples"] == 2
        assert len(summary["pass_at_k"]["pass"]) == 2
    rows = [json.loads(line) for line in open(tmp_path / "run" / "metrics.jsonl")]
    assert len(rows) == 2 * 2
    hf = HFTokenizer.from_dir(checkpoint_dir)
    for table in tables:  # the train and test tables, rendered by the chat template
        ids = table.prompt_tokens[0][table.prompt_mask[0] == 1].tolist()
        text = hf.tokenizer.decode(ids, skip_special_tokens=False)
        assert text.startswith("<|im_start|>user\nTom has ")
        assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert len(tables) == 2
    assert results["checker"]["checked"] + results["checker"]["cache_hits"] > 0


@pytest.mark.slow  # ~25 s CPU: the SFT step compiles
def test_fine_tuning_a_checkpoint_starts_from_its_parameters(checkpoint_dir, tmp_path):
    """sft_steps > 0 on a checkpoint: a few small steps move its parameters a little, far less
    than they differ from a random initialization of the same shapes."""
    import jax

    pairs = [(a, b) for a in range(6) for b in range(6)]
    path = write_sample(tmp_path / "train.jsonl", pairs)
    run = math_experiment.MathRunConfig(
        train_path=path, test_path=path, workdir=str(tmp_path), model=checkpoint_dir,
        chat_template="model", sft_steps=2, sft_learning_rate=1e-4, prompt_length=64,
        completion_length=8,
    )  # fmt: skip
    tok, template = math_base.load_tokenizer(run)
    model = math_base.model_config(run, tok)
    problems = [Problem(f"Tom has {a} apples and finds {b} more. How many now?", str(a + b), 0)
                for a, b in pairs]  # fmt: skip
    loaded, _ = checkpoint.load(checkpoint_dir, max_len=model.max_len)
    mesh = population.make_mesh(mesh_lib.MeshConfig((1,), ("seeds",)))
    tuned = math_base.base_params(run, model, problems, tok, template, jax.random.key(0), mesh)
    fresh = math_base.base_params(
        dataclasses.replace(run, model="tiny", sft_steps=0), model, problems, tok, template,
        jax.random.key(0), mesh,
    )  # fmt: skip

    def distance(a, b):
        pairs = zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
        return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in pairs)

    moved = distance(tuned, loaded)
    assert 0 < moved < 1e-2 < distance(fresh, loaded)
