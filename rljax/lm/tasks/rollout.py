"""The held-out evaluation of a policy: n completions per problem, decoded, verified, pass@k.

`evaluate_policy` is the one evaluator of the toy tasks and math. What differs between them is
passed in: the sampler (the toy tasks' jitted KV-cache sampler on one policy's parameters, math's
sharded sampler of one learner of a population) and the verifier (a toy task's host verifier,
`task_verifier`; math's checker, `rljax.lm.tasks.math_task.verifier`). Decoding and verification
are plain Python on the host (verifiers parse strings; nothing is evaluated).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from rljax.lm.agentic.rollout import final_action, sample_episodes
from rljax.lm.model import tokenizer
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.sampling import sample
from rljax.lm.tasks import Problem, Task, safe_verify
from rljax.lm.tasks.batches import completion_length, encode_prompts
from rljax.lm.tasks.device_reward import make_table
from rljax.lm.tasks.evaluation import summarize

sample_jit = jax.jit(
    sample, static_argnums=(1,), static_argnames=("max_new_tokens", "temperature", "top_p")
)
episodes_jit = jax.jit(
    sample_episodes, static_argnums=(1, 2), static_argnames=("temperature", "top_p", "recompute")
)

# (prompt tokens [R, P], prompt mask [R, P], first problem of the batch) -> completions [R, A],
# or None on a process that does not judge (a multi-process run judges on process 0 only).
Sampler = Callable[[np.ndarray, np.ndarray, int], np.ndarray | None]
# (the problem of each completion, its decoded text) -> whether each answer is correct.
Verifier = Callable[[list[Problem], list[str]], Sequence[bool]]


def task_verifier(task: Task) -> Verifier:
    """A toy task's host verifier (`safe_verify`) as a `Verifier`."""

    def verify(problems: list[Problem], texts: list[str]) -> list[bool]:
        return [safe_verify(task, p, t).correct for p, t in zip(problems, texts, strict=True)]

    return verify


def evaluate_policy(
    sample_fn: Sampler,
    verify: Verifier,
    tok,
    problems: list[Problem],
    prompt_tokens: np.ndarray,
    prompt_mask: np.ndarray,
    *,
    num_samples: int,
    batch_problems: int = 0,
) -> dict | None:
    """pass@k (k = 1..n), distinct correct answers and accuracy by level of one policy.

    A sample is correct when it ended (an EOS within its budget) and `verify` accepts its text:
    correct[i, j] = finished[i, j] ∧ verify(problem i, text[i, j]).

    Args:
      sample_fn: the policy's `Sampler`, called once per batch of problems with each prompt
        repeated `num_samples` times (rows problem-major).
      verify: the `Verifier` of the task.
      tok: decodes the completions (`rljax.lm.model.tokenizer.Tokenizer`).
      problems: the N held-out problems.
      prompt_tokens, prompt_mask: `[N, P]` their encoded prompts (a `ProblemTable`'s).
      num_samples: n completions per problem.
      batch_problems: problems per call of `sample_fn` (0: all at once).

    Returns:
      `rljax.lm.tasks.evaluation.summarize` of the `[N, n]` correctness table, or None where
      `sample_fn` returned None.
    """
    step = batch_problems or len(problems)
    correct, answers = [], []
    for start in range(0, len(problems), step):
        chunk = problems[start : start + step]
        rows = slice(start, start + len(chunk))
        tokens = sample_fn(
            np.repeat(prompt_tokens[rows], num_samples, axis=0),
            np.repeat(prompt_mask[rows], num_samples, axis=0),
            start,
        )
        if tokens is None:
            return None
        decoded = [tok.decode(row) for row in np.asarray(tokens)]
        texts = [text for text, _ in decoded]
        finished = np.asarray([done for _, done in decoded], bool)
        owners = [chunk[r // num_samples] for r in range(len(decoded))]
        ok = finished & np.asarray(verify(owners, texts), bool)
        correct.append(ok.reshape(len(chunk), num_samples))
        answers.extend(texts[i * num_samples : (i + 1) * num_samples] for i in range(len(chunk)))
    levels = np.asarray([p.level for p in problems])
    return summarize(np.concatenate(correct), answers, levels)


def evaluate(
    params,
    model_cfg: TransformerConfig,
    task: Task,
    problems: list[Problem],
    key: jax.Array,
    *,
    num_samples: int,
    temperature: float,
    top_p: float,
    batch_problems: int = 128,
    tok=tokenizer.CHAR,
    env=None,
) -> dict:
    """`evaluate_policy` of a toy task for one policy's parameters: its prompts (`tok`), the
    jitted sampler (batch b of problems with `fold_in(key, first problem of b)`) and the task's
    verifier. With `env` (a `rljax.lm.agentic.env.TextEnv`) each sample is an episode and the
    verifier reads its last action."""

    if env is not None:  # episodes in the environment; the verifier reads the last action
        table = jax.tree.map(jnp.asarray, make_table(task, problems, tok))

        def sample_fn(tokens, mask, start):
            rows = start + jnp.arange(tokens.shape[0]) // num_samples
            out = episodes_jit(
                params, model_cfg, env, tokens, mask, jax.tree.map(lambda x: x[rows], table),
                jax.random.fold_in(key, start), temperature=temperature, top_p=top_p,
            )  # fmt: skip
            return np.asarray(final_action(out, env.spec))

    else:

        def sample_fn(tokens, mask, start):
            out = sample_jit(
                params,
                model_cfg,
                tokens,
                mask,
                jax.random.fold_in(key, start),
                max_new_tokens=completion_length(task),
                temperature=temperature,
                top_p=top_p,
            )
            return np.asarray(out.tokens)

    prompt_tokens, prompt_mask = encode_prompts(task, problems, tok)
    return evaluate_policy(
        sample_fn,
        task_verifier(task),
        tok,
        problems,
        prompt_tokens,
        prompt_mask,
        num_samples=num_samples,
        batch_problems=batch_problems,
    )
