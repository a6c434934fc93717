"""Math data files: GSM8K / MATH layouts in JSONL and Parquet, field maps, refused rows, splits."""

import json

import numpy as np
import pytest

from rljax.lm.model import tokenizer
from rljax.lm.tasks import Problem, device_reward, math_data

GSM8K_ROWS = [
    {"question": "Natalia sold 48 clips in April and half as many in May. Total?",
     "answer": "In May she sold 48/2 = <<48/2=24>>24.\n48+24 = <<48+24=72>>72\n#### 72"},
    {"question": "Weng earns $12 an hour. How much for 50 minutes?",
     "answer": "12/60 = $0.2 per minute.\n0.2 x 50 = $10\n#### 10"},
    {"question": "A farm has 1,000 cows and sells none. How many?", "answer": "#### 1,000"},
]  # fmt: skip
MATH_ROWS = [
    {"problem": "What is $\\frac{2}{4}$ in lowest terms?",
     "solution": "Divide by 2: $\\boxed{\\frac{1}{2}}$.", "level": "Level 1", "type": "Prealgebra"},
    {"problem": "Solve $x^2 < 4$.", "solution": "So $x \\in \\boxed{(-2, 2)}$.",
     "level": "Level 3", "type": "Algebra"},
]  # fmt: skip


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return str(path)


def test_gsm8k_jsonl_rows_become_problems_with_extracted_answers(tmp_path):
    path = write_jsonl(tmp_path / "train.jsonl", GSM8K_ROWS)
    problems = math_data.load(path, math_data.LAYOUTS["gsm8k"])
    assert [p.answer for p in problems] == ["72", "10", "1,000"]
    assert problems[0].prompt == GSM8K_ROWS[0]["question"]
    assert {p.level for p in problems} == {1}


def test_math_parquet_rows_keep_level_and_type(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(tmp_path / "test.parquet")
    pq.write_table(pa.Table.from_pylist(MATH_ROWS), path)
    problems = math_data.load(path, math_data.LAYOUTS["math"])
    assert problems == [
        Problem(MATH_ROWS[0]["problem"], "\\frac{1}{2}", 1, "Prealgebra"),
        Problem(MATH_ROWS[1]["problem"], "(-2, 2)", 3, "Algebra"),
    ]


def test_field_mapping_reads_another_layout(tmp_path):
    rows = [{"prompt": "1+1?", "target": "\\boxed{2}", "difficulty": 4}]
    path = write_jsonl(tmp_path / "other.jsonl", rows)
    fields = math_data.fields_for(
        "math", question="prompt", solution="target", level="difficulty", kind=""
    )
    assert math_data.load(path, fields) == [Problem("1+1?", "2", 4, "")]
    with pytest.raises(ValueError, match="field 'answer_field' is unknown"):
        math_data.fields_for("math", answer_field="x")
    with pytest.raises(ValueError, match="layout='gsm9k' is unknown; valid: gsm8k, math"):
        math_data.fields_for("gsm9k")


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", r"bad\.jsonl:2: not a JSON object"),
        ("[1, 2]", r"bad\.jsonl:2: a row must be a JSON object, got list"),
        ('{"question": "q"}', r"bad\.jsonl:2: field 'answer' is missing"),
        ('{"question": 3, "answer": "#### 1"}', r"bad\.jsonl:2: field 'question'=3 is not"),
        ('{"question": "q", "answer": "no final line"}', r"bad\.jsonl:2: field 'answer' has no"),
        ('{"question": "q\\u0000", "answer": "#### 1"}', r"bad\.jsonl:2: .* NUL byte"),
    ],
)
def test_malformed_rows_are_refused_with_file_and_line(tmp_path, line, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [GSM8K_ROWS[0], line, GSM8K_ROWS[1]])
    with pytest.raises(ValueError, match=message):
        math_data.load(path, math_data.LAYOUTS["gsm8k"])


def test_bad_level_and_parquet_row_numbers(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(tmp_path / "bad.parquet")
    rows = [MATH_ROWS[0], {**MATH_ROWS[1], "level": "Level ?"}]
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(ValueError, match=r"bad\.parquet:row 2: field 'level'='Level \?'"):
        math_data.load(path, math_data.LAYOUTS["math"])


def test_missing_empty_and_unknown_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        math_data.load(str(tmp_path / "none.jsonl"), math_data.LAYOUTS["gsm8k"])
    with pytest.raises(ValueError, match="has no rows"):
        math_data.load(write_jsonl(tmp_path / "e.jsonl", []), math_data.LAYOUTS["gsm8k"])
    with pytest.raises(ValueError, match="neither .jsonl nor .parquet"):
        math_data.load(str(tmp_path / "x.csv"), math_data.LAYOUTS["gsm8k"])


def test_a_test_question_in_the_training_file_is_refused(tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", GSM8K_ROWS)
    leaked = {**GSM8K_ROWS[1], "question": "  weng EARNS $12 an hour.\nHow much for 50 minutes? "}
    test = write_jsonl(tmp_path / "test.jsonl", [leaked])
    fields = math_data.LAYOUTS["gsm8k"]
    with pytest.raises(ValueError, match=r"1 training question\(s\) are in the test file.*row 2"):
        math_data.load_splits(train, test, fields)
    clean = write_jsonl(tmp_path / "clean.jsonl", [{**leaked, "question": "Another one?"}])
    train_problems, test_problems = math_data.load_splits(train, clean, fields)
    assert len(train_problems) == 3 and len(test_problems) == 1


def test_prompt_table_uses_the_template_and_tokenizer():
    tok, template = tokenizer.ByteTokenizer(), tokenizer.PlainTemplate("Q: ", "\nA: ")
    problems = [Problem("Is 2 > 1?", "1", 2), Problem("Σ of 1, 2?", "3", 1)]
    table = device_reward.make_table(None, problems, tok, template=template, prompt_length=24)
    text, finished = tok.decode(np.asarray(table.prompt_tokens[1]))
    assert (text, finished) == ("Q: Σ of 1, 2?\nA: ", False)
    assert table.prompt_tokens[1][table.prompt_mask[1] == 1][0] == tok.bos_id
    assert int(table.prompt_mask[0].sum()) == 1 + len("Q: Is 2 > 1?\nA: ")
    np.testing.assert_array_equal(table.level, [2, 1])
    with pytest.raises(ValueError, match="prompt 0 .* needs 17 tokens > prompt length 8"):
        device_reward.make_table(None, problems, tok, template=template, prompt_length=8)
