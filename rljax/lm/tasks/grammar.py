"""A small integer-expression grammar: the only way model output is ever interpreted.

    expr   := term (('+' | '-') term)*
    term   := factor (('*' | '/') factor)*
    factor := NUMBER | '(' expr ')'
    NUMBER := digit{1, MAX_DIGITS}

A recursive-descent parser with hard limits on length, nesting depth, literal size and intermediate
magnitude. It never calls `eval`, never raises on bad input (it returns `None`), and division is
allowed only when it is exact. Unary minus is not part of the grammar.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MAX_CHARS = 64
MAX_DEPTH = 8
MAX_DIGITS = 4
MAX_ABS = 10**9
_INT_RE = re.compile(r"-?[0-9]{1,9}")


class Parsed(NamedTuple):
    """The value of an expression and the number literals it used, in order."""

    value: int
    literals: tuple[int, ...]


def parse_int(text: str) -> int | None:
    """Parses an optionally negative integer of at most 9 digits; `None` if `text` is not one."""
    if not isinstance(text, str) or _INT_RE.fullmatch(text) is None:
        return None
    return int(text)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.literals: list[int] = []

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expr(self, depth: int) -> int | None:
        value = self.term(depth)
        while value is not None and self.peek() in ("+", "-") and self.peek():
            op = self.peek()
            self.pos += 1
            rhs = self.term(depth)
            if rhs is None:
                return None
            value = value + rhs if op == "+" else value - rhs
            if abs(value) > MAX_ABS:
                return None
        return value

    def term(self, depth: int) -> int | None:
        value = self.factor(depth)
        while value is not None and self.peek() in ("*", "/") and self.peek():
            op = self.peek()
            self.pos += 1
            rhs = self.factor(depth)
            if rhs is None:
                return None
            if op == "*":
                value = value * rhs
            elif rhs == 0 or value % rhs != 0:
                return None
            else:
                value = value // rhs
            if abs(value) > MAX_ABS:
                return None
        return value

    def factor(self, depth: int) -> int | None:
        ch = self.peek()
        if ch == "(":
            if depth >= MAX_DEPTH:
                return None
            self.pos += 1
            value = self.expr(depth + 1)
            if value is None or self.peek() != ")":
                return None
            self.pos += 1
            return value
        start = self.pos
        while self.peek() and self.peek() in "0123456789":
            self.pos += 1
        digits = self.text[start : self.pos]
        if not digits or len(digits) > MAX_DIGITS:
            return None
        self.literals.append(int(digits))
        return int(digits)


def parse_expression(text: str) -> Parsed | None:
    """Evaluates an integer expression of the grammar above; `None` if malformed or too large.

    Args:
      text: the candidate expression, e.g. "12*3+7". Whitespace is not allowed.

    Returns:
      `Parsed(value, literals)` or `None`. Never raises.
    """
    if not isinstance(text, str) or not text or len(text) > MAX_CHARS:
        return None
    if any(ch not in "0123456789+-*/()" for ch in text):
        return None
    parser = _Parser(text)
    value = parser.expr(0)
    if value is None or parser.pos != len(text):
        return None
    return Parsed(value, tuple(parser.literals))
