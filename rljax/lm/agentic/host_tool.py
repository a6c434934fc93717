"""Host tools: any Python function `str -> str` as a tool of a text environment, called from inside
the compiled program through `jax.pure_callback`, with a deadline per call.

The policy's tool call (its turn's text before the call token) is decoded on the host and passed
to the function in a thread of its own; the answer is encoded into the observation slot. Nothing
a tool does can stop the run:

    the function returns a string      its tokens (cut to the slot: "tool/truncated" counts it)
    returns something else             "error:nottext"
    raises                             "error:<exception type, lowercase>"
    runs past its deadline             "error:timeout" (the thread is abandoned; it is a
                                       daemon and cannot be killed, so a tool that never
                                       returns holds one thread per such call)
    text the tokenizer cannot encode   "error:notencodable"

(The error texts are spelled in the character tokenizer's alphabet: no spaces, no capitals.)

Every call of one step runs at once (one thread each), so a step waits at most one deadline.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from rljax.lm.model import tokenizer

# status codes of a call (`HostTool.__call__`'s third output)
OK, TRUNCATED, FAILED = 0, 1, 2


@dataclasses.dataclass(frozen=True, eq=False)
class HostTool:
    """`fn(call text) -> answer text` as a tool; `deadline_s` bounds each call."""

    fn: Callable[[str], object]
    deadline_s: float = 1.0
    tok: object = tokenizer.CHAR

    def __post_init__(self):
        if not callable(self.fn):
            raise ValueError(f"HostTool.fn={self.fn!r} is not callable")
        if not self.deadline_s > 0:
            raise ValueError(f"HostTool.deadline_s={self.deadline_s!r}; allowed: > 0 seconds")

    def answers(self, texts: list[str]) -> list[str]:
        """The function's answers to `texts`, all called at once, each within the deadline (or
        an "error:..." text)."""
        boxes: list[dict] = [{} for _ in texts]
        threads = [
            threading.Thread(target=_call, args=(self.fn, t, box), daemon=True)
            for t, box in zip(texts, boxes, strict=True)
        ]
        for thread in threads:
            thread.start()
        end = time.monotonic() + self.deadline_s
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))
        return [_text(box, thread.is_alive()) for box, thread in zip(boxes, threads, strict=True)]

    def _host(self, tokens, mask, called, length: int):
        """numpy `[..., A]` calls -> (`[..., O]` tokens, mask, `[...]` status)."""
        shape = tokens.shape[:-1]
        tokens = np.asarray(tokens).reshape(-1, tokens.shape[-1])
        mask = np.asarray(mask).reshape(tokens.shape)
        rows = np.flatnonzero(np.broadcast_to(np.asarray(called), shape).reshape(-1))
        texts = [self.tok.decode(tokens[i][mask[i] > 0].tolist() + [self.tok.eos_id])[0]
                 for i in rows]  # fmt: skip
        answers = dict(zip(rows.tolist(), self.answers(texts), strict=True))
        n = tokens.shape[0]
        out = np.full((n, length), self.tok.pad_id, np.int32)
        out_mask = np.zeros((n, length), np.int32)
        status = np.full(n, OK, np.int32)
        for i, text in answers.items():
            try:
                ids = self.tok.encode(text)
            except (KeyError, ValueError):
                ids, status[i] = self.tok.encode("error:notencodable"), FAILED
            if text.startswith("error:"):
                status[i] = FAILED
            if len(ids) > length:
                ids = ids[:length]
                status[i] = max(status[i], TRUNCATED)
            out[i, : len(ids)], out_mask[i, : len(ids)] = ids, 1
        return (out.reshape(*shape, length), out_mask.reshape(*shape, length),
                status.reshape(shape))  # fmt: skip

    def __call__(self, action: jax.Array, action_mask: jax.Array, called: jax.Array, length: int):
        """The observation `[O]` tokens and mask and the call's status (`OK` / `TRUNCATED` /
        `FAILED`) for one action `[A]` (vmappable: the rows of a step go to the host at once).
        """
        prefix = action.shape[:-1]
        shapes = (
            jax.ShapeDtypeStruct((*prefix, length), jnp.int32),
            jax.ShapeDtypeStruct((*prefix, length), jnp.int32),
            jax.ShapeDtypeStruct(prefix, jnp.int32),
        )
        return jax.pure_callback(
            lambda t, m, c: self._host(t, m, c, length), shapes, action, action_mask, called,
            vmap_method="expand_dims",
        )  # fmt: skip


def _call(fn, text: str, box: dict) -> None:
    try:
        box["out"] = fn(text)
    except BaseException as e:  # noqa: BLE001 - a tool's failure costs the episode only
        box["error"] = type(e).__name__


def _text(box: dict, running: bool) -> str:
    if running:
        return "error:timeout"
    if "error" in box:
        return f"error:{box['error'].lower()}"
    return box["out"] if isinstance(box["out"], str) else "error:nottext"
