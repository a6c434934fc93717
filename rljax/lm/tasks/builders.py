"""tensorflow-datasets builders for the tasks: array_record files, fixed splits, no TensorFlow.

Each builder writes a `train` and a `test` split generated from fixed seeds, disjoint by prompt,
with `num_*_per_level` problems at each difficulty level. `load_problems` builds on first use
(about a second) and reads back through `as_data_source`, the TF-free random-access reader. A
cache that cannot be read (a torn or truncated file) is deleted and built again, with a line
naming it.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import tensorflow_datasets as tfds

from rljax.lm.tasks import arithmetic, calculator, countdown, equation, guess, strings
from rljax.lm.tasks.base import Problem, Task, train_test_split

NUM_TRAIN_PER_LEVEL = 2000
NUM_TEST_PER_LEVEL = 100
SEED = 20261120


class _TaskBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Shared body of the task builders; subclasses only name their task."""

    VERSION = tfds.core.Version("1.1.0")
    RELEASE_NOTES = {"1.0.0": "Initial release.", "1.1.0": "Arithmetic: worked traces, 3 levels."}
    TASK: Task

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            description=f"rljax task '{self.TASK.name}', {self.TASK.num_levels} levels.",
            features=tfds.features.FeaturesDict(
                {
                    "prompt": tfds.features.Text(),
                    "answer": tfds.features.Text(),
                    "level": np.int32,
                    "info": tfds.features.Text(),
                }
            ),
        )

    def _split_generators(self, dl_manager):
        del dl_manager  # everything is generated, nothing is downloaded
        train, test = train_test_split(
            self.TASK,
            num_train_per_level=NUM_TRAIN_PER_LEVEL,
            num_test_per_level=NUM_TEST_PER_LEVEL,
            seed=SEED,
        )
        return {"train": self._generate_examples(train), "test": self._generate_examples(test)}

    # tfds announces "Downloading and preparing dataset ..." before building: nothing downloads
    # here, so say what happens instead.
    def _log_download_bytes(self) -> None:
        print(f"[rljax] building the {self.TASK.name} dataset in {self.data_dir} (first run only)")

    def _log_download_done(self) -> None:
        print(f"[rljax] built the {self.TASK.name} dataset in {self.data_dir}")

    def _generate_examples(self, problems: list[Problem]):
        for index, p in enumerate(problems):
            yield index, {"prompt": p.prompt, "answer": p.answer, "level": p.level, "info": p.info}


class RljaxArithmetic(_TaskBuilder):
    """Multi-step arithmetic, 1-4 operations."""

    TASK = arithmetic.TASK


class RljaxCountdown(_TaskBuilder):
    """Countdown with 2-4 numbers."""

    TASK = countdown.TASK


class RljaxStrings(_TaskBuilder):
    """String function composition, depth 1-3."""

    TASK = strings.TASK


class RljaxEquation(_TaskBuilder):
    """Linear equations, 3 levels."""

    TASK = equation.TASK


class RljaxCalculator(_TaskBuilder):
    """Multi-digit arithmetic for the calculator tool, 2 levels."""

    TASK = calculator.TASK


class RljaxGuess(_TaskBuilder):
    """Guess the number in 1..16 or 1..64."""

    TASK = guess.TASK


BUILDERS = {
    "arithmetic": RljaxArithmetic,
    "countdown": RljaxCountdown,
    "strings": RljaxStrings,
    "equation": RljaxEquation,
    "calculator": RljaxCalculator,
    "guess": RljaxGuess,
}


def load_problems(task_name: str, split: str, data_dir: str) -> list[Problem]:
    """Builds the task's dataset under `data_dir` if needed and returns one split as Problems."""
    if task_name not in BUILDERS:
        raise ValueError(f"task={task_name!r} is not one of {sorted(BUILDERS)}")
    if split not in ("train", "test"):
        raise ValueError(f"split={split!r} is not one of ['test', 'train']")
    if os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise ValueError(f"data_dir={data_dir} is a file; allowed: a directory (or a new path)")
    builder = BUILDERS[task_name](data_dir=data_dir, file_format="array_record")
    try:
        records = _read(builder, split)
    except Exception as e:  # noqa: BLE001 - any damage to the cached files: rebuild once
        print(
            f"[rljax] the {task_name} dataset cache {builder.data_dir} is unreadable "
            f"({_one_line(e)}); rebuilding it"
        )
        shutil.rmtree(builder.data_dir, ignore_errors=True)
        builder = BUILDERS[task_name](data_dir=data_dir, file_format="array_record")
        try:
            records = _read(builder, split)
        except Exception as e2:  # noqa: BLE001
            raise ValueError(
                f"the {task_name} dataset in {builder.data_dir} cannot be built or read "
                f"({_one_line(e2)}); allowed: a writable data_dir"
            ) from None
    return [
        Problem(
            prompt=r["prompt"].decode(),
            answer=r["answer"].decode(),
            level=int(r["level"]),
            info=r["info"].decode(),
        )
        for r in records
    ]


def level_splits(
    task_name: str, data_dir: str, *, max_level: int = 0, min_level: int = 1, train_problems=0,
    train_examples=(),
) -> tuple[list[Problem], list[Problem], list[Problem]]:  # fmt: skip
    """(SFT problems, RL training problems, held-out problems) of one range of levels.

    The SFT base sees every level up to `max_level` (0: all); RL trains on levels >= `min_level`,
    only the first `train_problems` if nonzero (1-shot RLVR & co.), or only the problems at the
    indices `train_examples` if given (1-shot RLVR's selected examples, in that order); the
    held-out problems are levels `min_level..max_level`, sorted by (level, prompt).
    """
    top = max_level or float("inf")
    sft = [p for p in load_problems(task_name, "train", data_dir) if p.level <= top]
    train = [p for p in sft if p.level >= min_level]
    test = [p for p in load_problems(task_name, "test", data_dir) if min_level <= p.level <= top]
    test = sorted(test, key=lambda p: (p.level, p.prompt))
    if train_examples:
        bad = [i for i in train_examples if not 0 <= i < len(train)]
        if bad:
            raise ValueError(
                f"train_examples={tuple(train_examples)} names problem {bad[0]}; allowed: "
                f"indices 0..{len(train) - 1} of the {len(train)} training problems"
            )
        return sft, [train[i] for i in train_examples], test
    return sft, train[:train_problems] if train_problems else train, test


def _read(builder, split: str) -> list:
    """Builds the dataset if needed and reads one split's records."""
    builder.download_and_prepare()
    source = builder.as_data_source(split=split)
    return [source[i] for i in range(len(source))]


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:200]
