"""Math word problems from local files: GSM8K and MATH layouts, field mappings, clean splits.

Nothing is downloaded. A split is one JSONL file (one JSON object per line) or one Parquet file,
in one of the layouts (or any other, through a `Fields` mapping):

  gsm8k  {"question": ..., "answer": "... worked solution ...\\n#### 72"}
  math   {"problem": ..., "solution": "... \\boxed{\\frac{1}{2}} ...", "level": "Level 3",
          "type": "Algebra"}

Each row becomes a `Problem(prompt=question, answer=reference answer, level, info=type)`, the
reference answer extracted from the solution by `rljax.lm.tasks.math_answers` (GSM8K `####`, MATH
the last `\\boxed{}`), in time linear in the row's length. A row that is not an object, lacks a
field, has a non-string text, no final answer, an empty one, one longer than
`math_answers.MAX_ANSWER_CHARS`, a `####` answer that is not a number (`#### seventy`: GSM8K's
answers all are numbers, so such a row would train with a reference no completion can match)
or an unreadable level is refused with `<file>:<line>` (JSONL) or `<file>:row <n>` (Parquet,
counting from 1), as is a line that is not UTF-8 or not JSON; a file that cannot be read is
refused naming it. `check_disjoint` refuses a training file that contains a test question
(compared after collapsing whitespace and case).
"""

from __future__ import annotations

import json
import os
import re
from typing import NamedTuple

from rljax.lm.tasks import Problem, math_answers


class Fields(NamedTuple):
    """Which field of a row holds what. `level` / `kind` may be "" (absent: level 1, no type)."""

    question: str
    solution: str
    level: str = ""
    kind: str = ""
    answer_modes: tuple[str, ...] = ("hash", "boxed")  # how the reference is extracted


LAYOUTS = {
    "gsm8k": Fields("question", "answer", answer_modes=("hash",)),
    "math": Fields("problem", "solution", "level", "type", answer_modes=("boxed",)),
}
FORMATS = ("jsonl", "parquet")
_LEVEL = re.compile(r"^(?:level\s*)?(\d+)$", re.IGNORECASE)


def fields_for(layout: str, **overrides) -> Fields:
    """The `Fields` of a named layout with some fields renamed (a config's field mapping)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r} is unknown; valid: {', '.join(LAYOUTS)}")
    for name in overrides:
        if name not in Fields._fields:
            raise ValueError(f"field {name!r} is unknown; valid: {', '.join(Fields._fields)}")
    fields = LAYOUTS[layout]._replace(**overrides)
    math_answers.check_modes(fields.answer_modes)
    return fields


def file_format(path: str) -> str:
    """ "jsonl" or "parquet" from the file name; a ValueError names the path otherwise."""
    if path.endswith((".jsonl", ".json")):
        return "jsonl"
    if path.endswith((".parquet", ".pq")):
        return "parquet"
    raise ValueError(f"data file {path!r} is neither .jsonl nor .parquet; formats: {FORMATS}")


def read_rows(path: str):
    """Yields `(where, row)` for every row of a JSONL or Parquet file (`where` = "file:line");
    a ValueError names the file (and the line) of anything unreadable."""
    fmt = file_format(path)
    if not os.path.isfile(path):
        raise ValueError(f"data file {path!r} does not exist")
    if fmt == "parquet":
        yield from _parquet_rows(path)
        return
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below; bytes, so a bad byte names its line
    except OSError as e:
        raise ValueError(f"data file {path!r} cannot be read: {e.strerror}") from None
    with f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                bad = raw[e.start : e.start + 4]
                raise ValueError(
                    f"{path}:{number}: not UTF-8 (byte {e.start + 1} of the line, {bad!r}); "
                    "allowed: UTF-8 text"
                ) from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not a JSON object ({e.msg})") from None
            except (ValueError, RecursionError) as e:  # a 5,000-digit number, 10^5 nested lists
                raise ValueError(f"{path}:{number}: not a readable JSON object ({e})") from None
            yield f"{path}:{number}", row


def _parquet_rows(path: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as e:
        message = " ".join(str(e).split())
        raise ValueError(f"{path}: not a readable Parquet file ({message:.200})") from None
    for index, row in enumerate(rows):
        yield f"{path}:row {index + 1}", row


def _text(where: str, row: dict, name: str) -> str:
    if name not in row:
        raise ValueError(f"{where}: field {name!r} is missing; the row has {sorted(row)!r:.200}")
    value = row[name]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {name!r}={value!r:.60} is not a non-empty string")
    if "\x00" in value:
        raise ValueError(f"{where}: field {name!r} contains a NUL byte")
    return value


def _level(where: str, row: dict, name: str) -> int:
    if not name:
        return 1
    value = row.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    match = _LEVEL.match(str(value).strip()) if isinstance(value, str) else None
    if match and int(match.group(1)) >= 1:
        return int(match.group(1))
    raise ValueError(
        f"{where}: field {name!r}={value!r:.60} is not a level; allowed: an integer >= 1 or "
        "'Level n'"
    )


def _answer(where: str, fields: Fields, solution: str) -> str:
    """The reference answer of a solution; a ValueError says why there is none."""
    found = math_answers.find(solution, fields.answer_modes)
    name = fields.solution
    if found is None:
        modes = "/".join(fields.answer_modes)
        raise ValueError(f"{where}: field {name!r} has no final answer ({modes}): {solution!r:.80}")
    mode, answer = found
    if not answer:
        raise ValueError(f"{where}: field {name!r} has an empty final answer ({mode})")
    if len(answer) > math_answers.MAX_ANSWER_CHARS:
        raise ValueError(
            f"{where}: field {name!r} has a final answer ({mode}) of {len(answer):,} characters, "
            f"{answer!r:.40}; allowed: at most {math_answers.MAX_ANSWER_CHARS}"
        )
    if mode == "hash" and not math_answers.is_number(answer):
        raise ValueError(
            f"{where}: field {name!r} has '#### {answer:.60}', not a number; allowed after "
            "####: one number (72, -3, 1,000, 0.5, 1/2)"
        )
    return answer


def parse_row(where: str, row, fields: Fields) -> Problem:
    """One row as a `Problem`; a ValueError starts with `where` and names the field."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: a row must be a JSON object, got {type(row).__name__}")
    question = _text(where, row, fields.question)
    solution = _text(where, row, fields.solution)
    answer = _answer(where, fields, solution)
    kind = _text(where, row, fields.kind) if fields.kind else ""
    return Problem(
        prompt=question, answer=answer, level=_level(where, row, fields.level), info=kind
    )


def load(path: str, fields: Fields) -> list[Problem]:
    """Every row of `path` as a Problem; refuses an empty file."""
    problems = [parse_row(where, row, fields) for where, row in read_rows(path)]
    if not problems:
        raise ValueError(f"data file {path!r} has no rows")
    return problems


def question_key(question: str) -> str:
    """What two questions are compared by: whitespace collapsed, case folded."""
    return " ".join(question.split()).casefold()


def check_disjoint(train: list[Problem], test: list[Problem], train_path: str = "train") -> None:
    """Raises a ValueError if any test question is also a training question."""
    test_keys = {question_key(p.prompt) for p in test}
    leaked = [i for i, p in enumerate(train) if question_key(p.prompt) in test_keys]
    if leaked:
        first = train[leaked[0]].prompt
        raise ValueError(
            f"{train_path}: {len(leaked)} training question(s) are in the test file, the first "
            f"(training row {leaked[0] + 1}): {first!r:.80}; remove them from the training file"
        )


def load_splits(train_path: str, test_path: str, fields: Fields):
    """`(train, test)` problem lists, checked to share no question."""
    train, test = load(train_path, fields), load(test_path, fields)
    check_disjoint(train, test, train_path)
    return train, test
