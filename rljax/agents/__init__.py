"""rljax.agents: one module per learner, each following the `Learner` contract below.

Every learner module (`ppo`, `ppo_rnn`, `dqn`, `sqirl`, `grpo`, `offline`) defines, at module level:

- `Config`: a frozen dataclass of static settings (shapes, loop lengths, architecture); the
  same for every member of a population, and part of the compiled program.
- `Hparams`: a NamedTuple whose leaves are arrays (floats, and integer codes for discrete
  choices), so a grid of them is a batch that `jax.vmap` trains in one program.
- `State`: a NamedTuple pytree holding parameters, optimizer state, keys, counters and the
  learner's `Hparams`.
- `validate(config)`: raises ValueError naming the field, its value and the allowed range,
  before anything is built or compiled.
- `init(config, env, key, hparams) -> State`.
- `act(config, ...)`: the policy's action (or completion) for an observation (or prompt).
- `update(config, env, state) -> (state, metrics)`: one update, pure and jittable; metrics are
  a flat dict of scalars with namespaced keys.
- `train_chunk(config, env, state, num_updates) -> (state, metrics[num_updates])`: a `lax.scan`
  of updates, the unit the host loop (`rljax.train.loop`) calls, vmapped over learners.

`env` is what the learner acts in: a gymnax environment for the control agents, the task data
(`grpo.TaskData`: base model and problem tables) for the RLVR learner, the fixed dataset
(`rljax.offline_data.Dataset`) for the offline learners (`offline`: BC, DQN, QR-DQN, CQL, BCQ,
CRR), which never touch an environment while training.
"""

from typing import Any, NamedTuple, Protocol

import jax


class Learner(Protocol):
    """The module-level interface of a learner (checked structurally, e.g. by the tests).

    `rljax.train.experiment` (control) and `rljax.train.lm_experiment` (RLVR) drive any module
    that has these members; go-to-definition on a member leads to each learner's own version.
    """

    Config: type
    Hparams: type[NamedTuple]
    State: type[NamedTuple]

    def validate(self, config: Any) -> None: ...

    def init(self, config: Any, env: Any, key: jax.Array, hparams: Any) -> Any: ...

    def update(self, config: Any, env: Any, state: Any) -> tuple[Any, dict[str, jax.Array]]: ...

    def train_chunk(
        self, config: Any, env: Any, state: Any, num_updates: int
    ) -> tuple[Any, dict[str, jax.Array]]: ...


MEMBERS = ("Config", "Hparams", "State", "validate", "init", "act", "update", "train_chunk")
