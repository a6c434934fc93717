"""Bad data files through the math entry point (`experiments/train_math.py` main): every kind of
bad file, as the training or the held-out split, is refused in one line that names the file
(and the line, for JSONL) within seconds, before anything compiles. The kinds are one table, so
a new kind is covered by adding a row."""

import json
import os
import re
import time

import pytest
from test_math_rlvr import write_sample

from rljax import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = {"question": "Tom has 2 apples and finds 3 more. How many now?", "answer": "2+3=5\n#### 5"}
PROBLEM = {"problem": "What is 1+1?", "solution": "It is $\\boxed{2}$.", "level": "Level 1",
           "type": "Algebra"}  # fmt: skip


def _jsonl(*middle: bytes, good=GOOD) -> bytes:
    """A good row, the bad line(s) (line 2 on), a good row."""
    row = json.dumps(good).encode()
    return b"\n".join([row, *middle, json.dumps({**good, "question": "Another?"}).encode()])


def _gsm8k(answer: str) -> bytes:
    return json.dumps({"question": "How many?", "answer": answer}).encode()


# kind: (layout, file name, bytes, the error after "<file>", `:2` being the line; a prompt too
# long for the model is named by its row, counting from 0, and its text)
BAD_FILES = {
    "invalid UTF-8": ("gsm8k", "d.jsonl", _jsonl(b'{"question": "caf\xe9?", "answer": "#### 1"}'),
                      r":2: not UTF-8 \(byte 18 of the line"),
    "#### followed by words": ("gsm8k", "d.jsonl", _jsonl(_gsm8k("So...\n#### seventy-two")),
                               r":2: field 'answer' has '#### seventy-two', not a number"),
    "a 2 KB reference answer": ("gsm8k", "d.jsonl", _jsonl(_gsm8k("#### " + "9" * 2048)),
                                r":2: field 'answer' has a final answer \(hash\) of 2,048 char"),
    "a 112 KB solution of spaces": (
        "gsm8k", "d.jsonl", _jsonl(_gsm8k("#### a" + " " * 112_000 + "!")),
        r":2: field 'answer' has a final answer \(hash\) of 112,002 characters",
    ),
    "a 112 KB solution of unclosed boxes": (
        "math", "d.jsonl", _jsonl(json.dumps({**PROBLEM, "solution": "\\boxed{" * 16_000}).encode(),
                                  good=PROBLEM),
        r":2: field 'solution' has no final answer \(boxed\)",
    ),
    "an empty answer": ("gsm8k", "d.jsonl", _jsonl(_gsm8k("#### $")),
                        r":2: field 'answer' has an empty final answer \(hash\)"),
    "not JSON": ("gsm8k", "d.jsonl", _jsonl(b'{"question": "q", '), r":2: not a JSON object"),
    "JSON nested 100,000 deep": ("gsm8k", "d.jsonl", _jsonl(b"[" * 100_000),
                                 r":2: not a readable JSON object .*recursion"),
    "a 5,000-digit number": ("gsm8k", "d.jsonl", _jsonl(b'{"question": "q", "n": ' + b"7" * 5000
                                                        + b"}"),
                             r":2: not a readable JSON object .*digits"),
    "no rows": ("gsm8k", "d.jsonl", b"\n\n", r"' has no rows"),
    "a question longer than the prompt": (
        "gsm8k", "d.jsonl", _jsonl(json.dumps({**GOOD, "question": "Why? " * 400}).encode()),
        r": prompt 1 \('Why\? Why.*needs \d+ tokens > prompt length",
    ),
    "Parquet that is not Parquet": ("gsm8k", "d.parquet", b"PAR1 not really",
                                    r": not a readable Parquet file"),
}  # fmt: skip


@pytest.mark.timeout(120)
@pytest.mark.parametrize("split", ["train_path", "test_path"])
@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_data_file_is_refused_naming_the_file_and_line(
    load_entry, tmp_path, monkeypatch, split, kind
):
    entry = load_entry("experiments/train_math.py")
    layout, name, content, message = BAD_FILES[kind]
    bad = tmp_path / name
    bad.write_bytes(content)
    if layout == "gsm8k":
        good = write_sample(tmp_path / "good.jsonl", [(1, 2), (3, 4)])
    else:
        good = str(tmp_path / "good.jsonl")
        with open(good, "w") as f:
            f.write(json.dumps({**PROBLEM, "problem": "What is 2+2?"}) + "\n")
    paths = {"train_path": good, "test_path": good, split: str(bad)}
    monkeypatch.chdir(ROOT)
    argv = [
        "train_math.py", f"--config=configs/grpo_math.py:{layout},tiny",
        f"--config.data.train_path={paths['train_path']}",
        f"--config.data.test_path={paths['test_path']}",
        f"--workdir={tmp_path / 'run'}", "--config.progress=False",
    ]  # fmt: skip
    start = time.monotonic()
    with pytest.raises(cli.ConfigError) as error:
        entry.main(argv)
    elapsed = time.monotonic() - start
    text = str(error.value)
    assert "\n" not in text
    assert str(bad) in text, text
    assert re.search(message, text), text
    assert elapsed < 30.0, f"{kind}: {elapsed:.1f} s before the error"  # was over a minute
