"""tensorflow-datasets builders for the tasks: array_record files, fixed splits, no TensorFlow.

Each builder writes a `train` and a `test` split generated from fixed seeds, disjoint by prompt,
with `num_*_per_level` problems at each difficulty level. `load_problems` builds on first use
(about a second) and reads back through `as_data_source`, the TF-free random-access reader.
"""

from __future__ import annotations

import numpy as np
import tensorflow_datasets as tfds

from rljax.lm.tasks import arithmetic, countdown, equation, strings
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


BUILDERS = {
    "arithmetic": RljaxArithmetic,
    "countdown": RljaxCountdown,
    "strings": RljaxStrings,
    "equation": RljaxEquation,
}


def load_problems(task_name: str, split: str, data_dir: str) -> list[Problem]:
    """Builds the task's dataset under `data_dir` if needed and returns one split as Problems."""
    if task_name not in BUILDERS:
        raise ValueError(f"task={task_name!r} is not one of {sorted(BUILDERS)}")
    if split not in ("train", "test"):
        raise ValueError(f"split={split!r} is not one of ['test', 'train']")
    builder = BUILDERS[task_name](data_dir=data_dir, file_format="array_record")
    builder.download_and_prepare()
    source = builder.as_data_source(split=split)
    records = [source[i] for i in range(len(source))]
    return [
        Problem(
            prompt=r["prompt"].decode(),
            answer=r["answer"].decode(),
            level=int(r["level"]),
            info=r["info"].decode(),
        )
        for r in records
    ]
