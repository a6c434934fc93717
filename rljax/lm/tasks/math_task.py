"""Math problems' prompts, reference completions, verifier and reward: the checker on the host.

Math goes through the toy tasks' interfaces: its prompts are `tokenizer.encode_prompts` of the
question rendered by a template (`PLAIN`: BOS, then `question + "\\nAnswer: "`; or a
`tokenizer.ChatTemplate`), its tables `device_reward.make_table(None, ...)` (rows without device
targets: the answers stay on the host, read by row index), its SFT completions
`tokenizer.encode_completions` of `completion(problem)`, and its held-out pass@k
`rollout.evaluate_policy` with `verifier(checker)`. The tokenizer is a
`rljax.lm.model.tokenizer.Tokenizer`: `tokenizer.ByteTokenizer` for the tiny decoder, an
`HFTokenizer` for a checkpoint's tokenizer.json. The sampler stops at the model config's
`eos_ids` and pads with its `pad_id`, so those come from the tokenizer
(`tokenizer.check_tokenizer`).

Reward of a completion (`math_scorer`), as `rljax.lm.tasks.reward`:

  r = 1[finished] · (1[answer ≡ reference] + format_weight · 1[an answer was extracted])

with the answer extracted by `rljax.lm.tasks.math_answers` and ≡ judged by
`rljax.lm.tasks.math_checker`, both inside the checker's deadline (`Checker.judge`), so no text
holds a completion's reward past `timeout_s` plus the cost of replacing a worker.
`device_reward.score(kind="host", ...)` calls the scorer with `vmap_method="expand_dims"`, so a
vmapped population sends all its completions in one call and every answer keeps its own
deadline.
"""

from __future__ import annotations

import numpy as np

from rljax.lm.model import tokenizer
from rljax.lm.tasks import Problem, math_answers
from rljax.lm.tasks.math_checker import Checker

PLAIN = tokenizer.PlainTemplate(suffix="\nAnswer: ")  # the prompt without a chat template


def completion(problem: Problem) -> str:
    """The reference completion SFT teaches: `"#### <answer>"` (the `hash` answer mode)."""
    return f"#### {problem.answer}"


def judge(checker: Checker, references: list[str], texts: list[str], modes):
    """`(correct, well_formed)` lists for completion texts against extracted references: the
    answers extracted and checked by `checker.judge`, both within its per-completion deadline."""
    correct, answers = checker.judge(references, texts, modes)
    return correct, [a is not None for a in answers]


def verifier(checker: Checker, modes=math_answers.MODES):
    """The checker as a `rollout.Verifier`: whether each text's extracted answer is its
    problem's reference (all of a call's pairs in one `checker.check`)."""
    modes = math_answers.check_modes(modes)

    def verify(problems: list[Problem], texts: list[str]) -> list[bool]:
        return judge(checker, [p.answer for p in problems], texts, modes)[0]

    return verify


def math_scorer(
    checker: Checker,
    problems: list[Problem],
    tok,
    *,
    format_weight: float,
    modes=math_answers.MODES,
):
    """A NumPy `(tokens [..., A], problem [...]) -> (reward, correct)` for `jax.pure_callback`.

    Any leading dimensions (it runs under `vmap` with `vmap_method="expand_dims"`)."""
    modes = math_answers.check_modes(modes)
    if not format_weight >= 0:
        raise ValueError(f"format_weight={format_weight!r} is invalid; allowed: >= 0")
    references = [p.answer for p in problems]

    def score(tokens, problem):
        tokens, problem = np.asarray(tokens), np.asarray(problem)
        flat_tokens = tokens.reshape(-1, tokens.shape[-1])
        flat_problem = np.broadcast_to(problem, tokens.shape[:-1]).reshape(-1)
        decoded = [tok.decode(row) for row in flat_tokens]
        refs = [references[int(i)] for i in flat_problem]
        correct, well_formed = judge(checker, refs, [text for text, _ in decoded], modes)
        finished = np.asarray([done for _, done in decoded], bool)
        correct = np.asarray(correct, bool) & finished
        reward = finished * (correct + format_weight * np.asarray(well_formed, np.float32))
        shape = tokens.shape[:-1]
        return reward.astype(np.float32).reshape(shape), correct.reshape(shape)

    return score
