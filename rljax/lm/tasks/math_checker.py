"""Equivalence of math answers with Hugging Face's math-verify, under a hard per-answer deadline.

`Checker.check(pairs)` judges `(reference, answer)` pairs of *extracted* answers
(`rljax.lm.tasks.math_answers.extract`): each side is parsed as `\\boxed{<answer>}` with
`math_verify.parse` and compared with `math_verify.verify(reference, answer)`, which accepts
0.5 = 1/2 = \\frac{1}{2} = \\dfrac12, 1,000 = 1000, sets in any order, intervals, x^2 = x*x.
`Checker.judge(references, texts, modes)` judges whole completions: the answer is extracted from
each text in a worker too, and extraction and check share the one deadline, so the reward of any
completion, however hostile its text, is known within `timeout_s` plus the cost of killing and
replacing a worker (docs/math.md has the measured worst case).

Deadline. math-verify's own timeouts use SIGALRM, which only works on the main thread (a
`jax.pure_callback` runs on a runtime thread), so both are switched off
(`parsing_timeout=None, timeout_seconds=None`) and the time is bounded here instead: the work
runs in `num_workers` child processes, each answer gets `timeout_s` seconds of wall time, and
a worker that overruns (sympy on 10^{10^{10^{10}}}, say) is killed, replaced, and the answer
judged wrong. Workers come from a fork server that has imported math-verify once, so a
replacement starts in milliseconds and never forks the JAX runtime. Nothing is ever `eval`ed:
math-verify parses LaTeX and sympy-parses plain expressions with its own restricted grammar.

Cache. Verdicts (timeouts included) are kept in an LRU of `cache_size` pairs, so a group of
completions that repeat an answer, or a hostile answer sampled again, costs one check; so are
the answers extracted by `judge` (keyed by a 16-byte digest of the text and the modes), so a
text seen again is not sent to a worker again.
"""

from __future__ import annotations

import collections
import hashlib
import multiprocessing
import multiprocessing.connection
import time
from collections.abc import Sequence

from rljax.lm.tasks import math_answers

_CONTEXT = None
_STARTUP_S = 120.0  # a worker's warm-up (importing and first parse) on a loaded machine


def _context():
    """The fork-server context shared by every checker (started once per process)."""
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(["math_verify", "rljax.lm.tasks.math_checker"])
    return _CONTEXT


def verdict(reference: str, answer: str) -> bool:
    """math-verify's verdict on two extracted answers, without its signal-based timeouts.

    Runs unbounded: call it through a `Checker` (or on inputs known to be small)."""
    from math_verify import parse, verify

    gold = parse("\\boxed{" + reference + "}", parsing_timeout=None)
    pred = parse("\\boxed{" + answer + "}", parsing_timeout=None)
    if not gold or not pred:
        return False
    return bool(verify(gold, pred, timeout_seconds=None))


def _extract(text: str, modes: tuple[str, ...]) -> str | None:
    return math_answers.extract(text, modes)


_JOBS = {"check": verdict, "extract": _extract}  # what a worker can be asked to do


def _serve(conn) -> None:
    """A worker: reads jobs (`("check", reference, answer)` or `("extract", text, modes)`),
    writes `(True, result)`, or `(False, None)` where the job raised, until the pipe closes."""
    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # the "timeout disabled" warning
    verdict("1", "1")  # math-verify builds its parsers on first use: not on an answer's clock
    conn.send("ready")
    while True:
        try:
            kind, *args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = (True, _JOBS[kind](*args))
        except BaseException:  # noqa: BLE001 - RecursionError, MemoryError: a wrong answer
            reply = (False, None)
        conn.send(reply)


def _text_key(text: str, modes: tuple[str, ...]) -> tuple[bytes, tuple[str, ...]]:
    """What a text's extracted answer is remembered by: a digest, not the (long) text."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest(), modes


class _Worker:
    def __init__(self):
        self.conn, child = _context().Pipe()
        self.process = _context().Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.ready = False  # warmed up
        self.job: int | None = None  # index of the job being run
        self.started = 0.0
        self.deadline = 0.0

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.conn.close()


class Checker:
    """Judges extracted answers against references with math-verify, `timeout_s` per answer.

    Args:
      timeout_s: wall-clock seconds one pair may take; an overrun is a wrong answer.
      num_workers: child processes checking in parallel.
      cache_size: verdicts, and extracted answers, remembered (least recently used dropped
        first).
    """

    def __init__(self, *, timeout_s: float = 2.0, num_workers: int = 2, cache_size: int = 65536):
        if not timeout_s > 0:
            raise ValueError(f"timeout_s={timeout_s!r} is invalid; allowed: > 0 seconds")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers={num_workers!r} is invalid; allowed: an integer >= 1")
        if not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size={cache_size!r} is invalid; allowed: an integer >= 0")
        self.timeout_s = float(timeout_s)
        self.num_workers = num_workers
        self.cache_size = cache_size
        self._cache: collections.OrderedDict = collections.OrderedDict()
        self._answers: collections.OrderedDict = collections.OrderedDict()  # (digest, modes)
        self._workers: list[_Worker] = []
        self.stats = {"checked": 0, "cache_hits": 0, "timeouts": 0}

    def forget(self) -> None:
        """Drops the remembered verdicts and zeroes `stats`: what follows is checked and counted
        on its own (a final evaluation's counts then do not depend on what training checked)."""
        self._cache.clear()
        self._answers.clear()
        self.stats = dict.fromkeys(self.stats, 0)

    def close(self) -> None:
        """Stops the workers (a later `check` starts new ones)."""
        for worker in self._workers:
            worker.kill()
        self._workers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _remember(self, key, value, cache=None) -> None:
        cache = self._cache if cache is None else cache
        if self.cache_size:
            cache[key] = value
            cache.move_to_end(key)
            while len(cache) > self.cache_size:
                cache.popitem(last=False)

    def check(self, pairs: Sequence[tuple[str | None, str | None]]) -> list[bool]:
        """Verdicts of `(reference, answer)` pairs; a None side (nothing extracted) is False."""
        return self._verdicts(pairs, [self.timeout_s] * len(pairs))

    def judge(
        self, references: Sequence[str], texts: Sequence[str], modes=math_answers.MODES
    ) -> tuple[list[bool], list[str | None]]:
        """`(correct, answers)` of completion texts against extracted references.

        Each distinct text's answer is extracted (`math_answers.extract(text, modes)`) in a
        worker with `timeout_s` of wall time; its check then gets what is left of that time, so
        extraction and check together never exceed `timeout_s` per completion (plus the cost of
        replacing a worker that overran). A text whose extraction overruns has no answer (None)."""
        modes = math_answers.check_modes(modes)
        if len(references) != len(texts):
            raise ValueError(f"{len(references)} references for {len(texts)} texts")
        by_text: dict[str, tuple[str | None, float]] = {}  # text: (answer, seconds it took)
        keys = {t: _text_key(t, modes) for t in texts if isinstance(t, str)}
        for text, key in keys.items():
            if key in self._answers:
                self._answers.move_to_end(key)
                by_text[text] = (self._answers[key], 0.0)
        distinct = [t for t in keys if t not in by_text]
        found, spent = self._run(
            [("extract", text, modes) for text in distinct], [self.timeout_s] * len(distinct)
        )
        for text, answer, seconds in zip(distinct, found, spent, strict=True):
            by_text[text] = (answer, seconds)
            self._remember(keys[text], answer, self._answers)
        answers = [by_text[t][0] if isinstance(t, str) else None for t in texts]
        left = [self.timeout_s - by_text[t][1] if isinstance(t, str) else 0.0 for t in texts]
        pairs = list(zip(references, answers, strict=True))
        return self._verdicts(pairs, left), answers

    def _verdicts(self, pairs, budgets: list[float]) -> list[bool]:
        """Verdicts of pairs, pair i given `budgets[i]` seconds (a repeated pair the least)."""
        verdicts = [False] * len(pairs)
        pending: dict[tuple[str, str], list[int]] = {}
        for i, (reference, answer) in enumerate(pairs):
            if reference is None or answer is None:
                continue
            key = (reference, answer)
            if key in self._cache:
                self._cache.move_to_end(key)
                verdicts[i] = self._cache[key]
                self.stats["cache_hits"] += 1
            else:
                pending.setdefault(key, []).append(i)
        keys = list(pending)
        results, _ = self._run(
            [("check", *key) for key in keys], [min(budgets[i] for i in pending[k]) for k in keys]
        )
        for key, result in zip(keys, results, strict=True):
            ok = result is True
            self._remember(key, ok)
            for i in pending[key]:
                verdicts[i] = ok
        self.stats["checked"] += len(keys)
        return verdicts

    def _run(self, jobs: list[tuple], budgets: list[float]) -> tuple[list, list[float]]:
        """`(results, seconds)` of jobs run on the workers, job i killed (its worker replaced)
        once it has taken `budgets[i]` seconds; an overrun, a job that raised or a worker that
        died gives None. A job with no budget left is not run (an overrun).

        A worker takes jobs only once it has warmed up (its "ready" message), so start-up
        time never counts against an answer."""
        results: list = [None] * len(jobs)
        spent = [max(0.0, b) for b in budgets]  # an overrun takes the whole budget
        queue = collections.deque(i for i in range(len(jobs)) if budgets[i] > 0)
        self.stats["timeouts"] += len(jobs) - len(queue)
        if not queue:
            return results, spent
        while len(self._workers) < min(self.num_workers, len(queue)):
            self._workers.append(_Worker())
        while queue or any(w.job is not None for w in self._workers):
            for worker in self._workers:
                if worker.ready and worker.job is None and queue:
                    worker.job = queue.popleft()
                    worker.started = time.monotonic()
                    worker.deadline = worker.started + budgets[worker.job]
                    worker.conn.send(jobs[worker.job])
            busy = [w for w in self._workers if w.job is not None]
            starting = [w for w in self._workers if not w.ready]
            deadline = min((w.deadline for w in busy), default=time.monotonic() + _STARTUP_S)
            wait = max(0.0, deadline - time.monotonic())
            ready = multiprocessing.connection.wait([w.conn for w in busy + starting], timeout=wait)
            now = time.monotonic()
            for worker in starting:
                if worker.conn in ready:
                    worker.ready = self._message(worker) == "ready"
                    if not worker.ready:
                        raise RuntimeError("a math-verify worker failed to start")
            if not busy and not any(w.ready for w in self._workers) and not ready:
                raise RuntimeError(f"no math-verify worker started within {_STARTUP_S} s")
            for worker in busy:
                if worker.conn in ready:
                    message = self._message(worker)
                    spent[worker.job] = now - worker.started
                    if message is None:  # the worker died (out of memory): no result
                        self._replace(worker)
                    elif message[0]:
                        results[worker.job] = message[1]
                    worker.job = None
                elif now >= worker.deadline:
                    self.stats["timeouts"] += 1
                    self._replace(worker)
        return results, spent

    @staticmethod
    def _message(worker: _Worker):
        try:
            return worker.conn.recv()
        except (EOFError, OSError):
            return None

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        self._workers[self._workers.index(worker)] = _Worker()
