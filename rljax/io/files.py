"""Reading the JSON files a run leaves behind (results, summaries, fingerprints) with errors that
name the file, and the line and column where it stops being JSON."""

import json


def read_json(
    path: str, hint: str = "a write cut short or an edit gone wrong: fix or remove the file"
):
    """The JSON value in ``path``.

    Raises:
      ValueError: naming ``path`` (and the line and column, then ``hint``) if it is not UTF-8
        JSON.
      OSError: if it does not open (its message names the file).
    """
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{path} is not JSON (line {e.lineno}, column {e.colno}: {e.msg}); {hint}"
        ) from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text (byte {e.start}: {e.reason})") from None


def read_jsonl(path: str) -> list:
    """One JSON value per non-blank line of ``path``; a line that is not JSON is a ValueError
    naming the file and the line."""
    rows = []
    with open(path, encoding="utf-8", errors="strict") as f:
        try:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise ValueError(f"{path} line {i} is not a JSON row ({e})") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{path} is not UTF-8 text (byte {e.start}: {e.reason})") from None
    return rows
