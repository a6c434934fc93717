"""Damaged Hugging Face folders: every file a checkpoint or tokenizer folder holds, and every kind
of damage it can take (cut short, empty, garbage, not JSON, a special token outside the vocabulary,
a chat template that does not compile or raises), is refused with one line naming that file, by
the loaders (`rljax.lm.model.hf`) and by each entry point that takes a folder
(`experiments/train_math.py`, `experiments/train_lm.py`), before anything is built.

A new file kind, damage or entry point is one more row of `CASES` or `ENTRY_POINTS`.
"""

import contextlib
import io
import json
import os
import shutil

import numpy as np
import pytest

from rljax import cli
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.hf import checkpoint
from rljax.lm.model.hf import config as hf_config
from rljax.lm.model.hf.tokenizer import HFTokenizer, train_bpe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECIALS = ("<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>")
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SHARD = "model-00001-of-00002.safetensors"


def _write_folder(folder: str, *, max_shard_bytes: int | None) -> None:
    """A random Qwen2-layout checkpoint (1 layer, d_model 32) with its BPE tokenizer.json,
    tokenizer_config.json (chat template) and generation_config.json."""
    texts = [f"Tom has {a} apples and finds {b} more. {a} + {b} = {a + b}" for a in range(12)
             for b in range(12)]  # fmt: skip
    os.makedirs(folder)
    train_bpe(texts, 300, SPECIALS).save(os.path.join(folder, "tokenizer.json"))
    conf = {"eos_token": "<|im_end|>", "pad_token": "<|pad|>", "chat_template": TEMPLATE}
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(conf, f)
    tok = HFTokenizer.from_dir(folder)
    cfg = TransformerConfig(
        vocab_size=tok.vocab_size + 4, d_model=32, n_layers=1, n_heads=4, d_ff=64, max_len=160,
        family="qwen2", n_kv_heads=2, tie_embeddings=True, eos_ids=tok.eos_ids, pad_id=tok.pad_id,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    params: dict = {}
    for path, x in checkpoint.expected_shapes(cfg).items():
        *parents, name = path.split("/")
        node = params
        for parent in parents:
            node = node.setdefault(parent, {})
        node[name] = (0.02 * rng.standard_normal(x.shape)).astype(np.float32)
    checkpoint.save(folder, params, cfg, max_shard_bytes=max_shard_bytes)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": list(tok.eos_ids)}, f)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_bad_files")
    out = {"single": str(root / "single"), "sharded": str(root / "sharded")}
    _write_folder(out["single"], max_shard_bytes=None)
    _write_folder(out["sharded"], max_shard_bytes=40_000)
    assert sorted(f for f in os.listdir(out["sharded"]) if f.endswith(".safetensors"))[0] == SHARD
    return out


# ---- kinds of damage -----------------------------------------------------------------------


def _cut_short(file):
    data = open(file, "rb").read()
    open(file, "wb").write(data[: len(data) // 2])


def _empty(file):
    open(file, "wb").close()


def _garbage(file):
    open(file, "wb").write(bytes(range(256)) * 4)


def _edit_json(**changes):
    def edit(file):
        with open(file) as f:
            data = json.load(f)
        data.update(changes)
        with open(file, "w") as f:
            json.dump(data, f)

    edit.__name__ = "set " + ",".join(changes)
    return edit


def _write(text):
    def write(file):
        with open(file, "w") as f:
            f.write(text)

    return write


def _jinja_file(text):
    """The template moved from tokenizer_config.json to chat_template.jinja, as `text`."""

    def move(file):
        folder = os.path.dirname(file)
        conf_file = os.path.join(folder, "tokenizer_config.json")
        with open(conf_file) as f:
            conf = json.load(f)
        del conf["chat_template"]
        with open(conf_file, "w") as f:
            json.dump(conf, f)
        _write(text)(file)

    return move


# case -> (folder, the file damaged, damage, what the line says besides the file's path,
#          whether only a rendering of the template finds it)
CASES = {
    "safetensors cut short": ("single", "model.safetensors", _cut_short, "not a readable safet"),
    "safetensors empty": ("single", "model.safetensors", _empty, "not a readable safetensors"),
    "safetensors garbage": ("single", "model.safetensors", _garbage, "not a readable safetensors"),
    "shard cut short": ("sharded", SHARD, _cut_short, "not a readable safetensors"),
    "shard empty": ("sharded", SHARD, _empty, "not a readable safetensors"),
    "index cut short": ("sharded", checkpoint.INDEX, _cut_short, "is not JSON (line"),
    "index garbage": ("sharded", checkpoint.INDEX, _garbage, "is not UTF-8 text"),
    "index without weight_map": ("sharded", checkpoint.INDEX, _write("{}"), "has no weight_map"),
    "index names a missing shard": (
        "sharded",
        checkpoint.INDEX,
        lambda f: _write(open(f).read().replace(SHARD, "model-gone.safetensors"))(f),
        "names model-gone.safetensors, which is not in",
    ),
    "config.json cut short": ("single", "config.json", _cut_short, "is not JSON (line"),
    "config.json a list": ("single", "config.json", _write("[1, 2]"), "holds a JSON list"),
    "config.json no hidden_size": (
        "single",
        "config.json",
        _edit_json(hidden_size=None),
        "hidden_size is missing",
    ),  # fmt: skip
    "config.json pad id": (
        "single",
        "config.json",
        _edit_json(pad_token_id=99_999),
        "pad_token_id=99999 is outside",
    ),  # fmt: skip
    "config.json bos id": (
        "single",
        "config.json",
        _edit_json(bos_token_id=-1),
        "bos_token_id=-1 is outside",
    ),  # fmt: skip
    "config.json eos id": (
        "single",
        "config.json",
        _edit_json(eos_token_id=[3, 5000]),
        "eos_token_id=[3, 5000] is",
    ),  # fmt: skip
    "generation_config.json eos id": (
        "single",
        "generation_config.json",
        _edit_json(eos_token_id=4096),
        "eos_token_id=4096 is",
    ),  # fmt: skip
    "generation_config.json not JSON": (
        "single",
        "generation_config.json",
        _write("eos_token_id: 3"),
        "is not JSON (line 1",
    ),  # fmt: skip
    "tokenizer.json cut short": ("single", "tokenizer.json", _cut_short, "does not read as a tok"),
    "tokenizer.json empty": ("single", "tokenizer.json", _empty, "does not read as a tokenizer"),
    "tokenizer_config.json not JSON": (
        "single",
        "tokenizer_config.json",
        _write('{"eos_token": '),
        "is not JSON (line 1",
    ),  # fmt: skip
    "pad token outside the vocabulary": (
        "single",
        "tokenizer_config.json",
        _edit_json(pad_token="<|nope|>"),
        "pad_token='<|nope|>' is not in the vocabulary",
    ),  # fmt: skip
    "eos token outside the vocabulary": (
        "single",
        "tokenizer_config.json",
        _edit_json(eos_token={"content": "<|end|>"}),
        "eos_token='<|end|>' is not in the vocabulary",
    ),  # fmt: skip
    "bos token outside the vocabulary": (
        "single",
        "tokenizer_config.json",
        _edit_json(bos_token="<s>"),
        "bos_token='<s>' is not in the vocabulary",
    ),  # fmt: skip
    "chat template does not compile": (
        "single",
        "tokenizer_config.json",
        _edit_json(chat_template="{% for m in messages %}"),
        "the chat template in {file} (chat_template) does not compile (line 1",
    ),  # fmt: skip
    "chat template not text": (
        "single",
        "tokenizer_config.json",
        _edit_json(chat_template=[{"name": "default"}]),
        "(chat_template) is a JSON list",
    ),  # fmt: skip
    "chat template raises": (
        "single",
        "tokenizer_config.json",
        _edit_json(chat_template="{{ raise_exception('only system turns') }}"),
        "the chat template in {file} (chat_template) failed to render a conversation: "
        "TemplateError: only system turns",
    ),  # fmt: skip
    "chat template trips the sandbox": (
        "single",
        "tokenizer_config.json",
        _edit_json(chat_template="{{ messages.__class__.__mro__ }}"),
        "failed to render a conversation: SecurityError: access to attribute '__class__'",
    ),  # fmt: skip
    "chat template type error": (
        "single",
        "tokenizer_config.json",
        _edit_json(chat_template="{{ 1 + messages }}"),
        "failed to render a conversation: TypeError",
    ),  # fmt: skip
    "chat_template.jinja does not compile": (
        "single",
        "chat_template.jinja",
        _jinja_file("{% if messages %}"),
        "the chat template in {file} does not compile (line 1",
    ),  # fmt: skip
    "chat_template.jinja raises": (
        "single",
        "chat_template.jinja",
        _jinja_file("{{ raise_exception('no') }}"),
        "the chat template in {file} failed to render a conversation: TemplateError: no",
    ),  # fmt: skip
    "chat_template.jinja not UTF-8": (
        "single",
        "chat_template.jinja",
        lambda f: (_jinja_file("")(f), _garbage(f)),
        "is not UTF-8 text",
    ),  # fmt: skip
}
RENDERED = ("raises", "trips the sandbox", "type error")  # only a rendering finds these


def _damaged(folders, tmp_path, case) -> tuple[str, str, str]:
    """(folder, damaged file, expected text) of `case`, on a fresh copy of its folder."""
    kind, name, damage, expected = CASES[case]
    folder = str(tmp_path / kind)
    shutil.copytree(folders[kind], folder)
    file = os.path.join(folder, name)
    damage(file)
    return folder, file, expected.replace("{file}", file)


def _load_everything(folder: str) -> None:
    """What the entry points read of a folder, through the loaders themselves."""
    hf_config.read(folder)
    checkpoint.load(folder)
    tok = HFTokenizer.from_dir(folder)
    tok.apply_chat_template([{"role": "user", "content": "1 + 1?"}])


@pytest.mark.parametrize("case", list(CASES))
def test_loaders_name_the_damaged_file(folders, tmp_path, case):
    folder, file, expected = _damaged(folders, tmp_path, case)
    with pytest.raises(ValueError) as info:
        _load_everything(folder)
    message = str(info.value)
    assert file in message and expected in message and "\n" not in message, message


def test_the_undamaged_folders_load(folders):
    for folder in folders.values():
        _load_everything(folder)


def _gsm8k(path: str) -> str:
    with open(path, "w") as f:
        for a, b in [(1, 2), (3, 4), (2, 5), (6, 1)]:
            row = {"question": f"Tom has {a} apples and finds {b} more?", "answer": f"#### {a + b}"}
            f.write(json.dumps(row) + "\n")
    return path


def _math_argv(folder, tmp_path):
    data = [f"--config.data.{s}_path={_gsm8k(str(tmp_path / f'{s}.jsonl'))}" for s in ("train",
            "test")]  # fmt: skip
    return [
        "train_math.py", "--config=configs/grpo_math.py:gsm8k,tiny", *data,
        f"--config.model.path={folder}", "--config.model.chat_template=model",
        "--config.sft.steps=0", "--config.progress=False", f"--workdir={tmp_path}/run",
    ]  # fmt: skip


def _lm_argv(folder, tmp_path):
    return [
        "train_lm.py", "--config=configs/grpo.py:arithmetic,tiny", f"--config.model.path={folder}",
        f"--config.model.tokenizer={folder}", f"--workdir={tmp_path}/run",
    ]  # fmt: skip


# entry point -> (script, its command line for a folder, whether it renders the chat template)
ENTRY_POINTS = {
    "train_math": ("experiments/train_math.py", _math_argv, True),
    "train_lm": ("experiments/train_lm.py", _lm_argv, False),
}


@pytest.fixture(scope="module")
def entries(load_entry):
    return {name: load_entry(script) for name, (script, _, _) in ENTRY_POINTS.items()}


def _run(entry, argv) -> tuple[int, list[str]]:
    """`cli.main` around the entry point's `main` (what its `__main__` does): exit code and the
    stderr lines."""
    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)  # config paths are relative to the repository
    try:
        with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as info:
            cli.main(lambda: entry.main(argv), debug=False)
    finally:
        os.chdir(cwd)
    return info.value.code, err.getvalue().strip().splitlines()


@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
@pytest.mark.parametrize("case", list(CASES))
def test_entry_points_refuse_the_damaged_file_naming_it(
    folders, entries, tmp_path, entry_point, case
):
    _, argv_of, renders = ENTRY_POINTS[entry_point]
    if not renders and any(word in case for word in RENDERED):
        pytest.skip(f"{entry_point} never renders the chat template")
    folder, file, expected = _damaged(folders, tmp_path, case)
    code, lines = _run(entries[entry_point], argv_of(folder, tmp_path))
    assert code == cli.EXIT_USAGE, lines
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert file in lines[0] and expected in lines[0], lines[0]
    assert not os.path.exists(tmp_path / "run" / "metrics.jsonl")  # refused before it ran


@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
def test_entry_points_accept_the_undamaged_folder(
    folders, entries, tmp_path, monkeypatch, entry_point
):
    """The control: the same command lines on the folders as built parse and validate."""
    _, argv_of, _ = ENTRY_POINTS[entry_point]
    monkeypatch.chdir(ROOT)
    for folder in folders.values():
        entries[entry_point].parse(argv_of(folder, tmp_path))
