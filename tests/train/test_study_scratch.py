"""rljax.train.study_scratch.distinct: distinct prompts, none held out, drawn in order."""

import numpy as np

from rljax.lm.tasks.base import Problem
from rljax.train import study_scratch


def _draw(rng, numbers: int) -> Problem:
    n = int(rng.integers(0, numbers))
    return Problem(prompt=f"p{n}", answer=str(n), level=1, info="")


def test_distinct_skips_repeats_and_excluded_prompts():
    rng = np.random.default_rng(0)
    out = study_scratch.distinct(5, {"p0", "p1"}, _draw, rng, numbers=9)
    prompts = [p.prompt for p in out]
    assert len(prompts) == 5 and len(set(prompts)) == 5
    assert not {"p0", "p1"} & set(prompts)
    # the same draws as a loop over the generator: the first new prompts in order
    rng, seen, expected = np.random.default_rng(0), {"p0", "p1"}, []
    while len(expected) < 5:
        p = _draw(rng, 9).prompt
        if p not in seen:
            seen.add(p)
            expected.append(p)
    assert prompts == expected
