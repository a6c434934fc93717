"""rljax.agents: one module per learner, each a `Learner` (the Protocol below).

Every learner module (`ppo`, `ppo_rnn`, `dqn`, `pqn`, `sqirl`, `sac`, `td3`, `mpo`, `grpo`,
`stale_grpo`, `offline`) defines, at module level:

- `Config`: a frozen dataclass of static settings (shapes, loop lengths, architecture); the
  same for every member of a population, and part of the compiled program.
- `Hparams`: a NamedTuple whose leaves are arrays (floats, and integer codes for discrete
  choices), so a grid of them is a batch that `jax.vmap` trains in one program.
- `HPARAM_RULES`: `{field: (check, allowed)}` for the float `Hparams` fields a config sets
  (the pipeline checks every grid point's values before anything compiles).
- `State`: a NamedTuple pytree holding parameters, optimizer state, keys, counters and the
  learner's `Hparams`.
- `validate(config)`: raises ValueError naming the field, its value and the allowed range,
  before anything is built or compiled. Every control learner (those `experiments/train.py`
  runs) also defines `validate_env(config, env)`, which the trainer calls with the environment
  before compiling: it refuses an action space the learner cannot act in (DQN, IQN, PQN or
  SQIRL on Pendulum; SAC's continuous variant on CartPole); PPO's accepts every environment.
  A learner whose gradient steps wait for some env steps names that setting `learning_starts`
  (`dqn`, `sac`, `td3`, `mpo`): the trainer refuses a budget that ends before it
  (`rljax.train.experiment.check_learning_starts`).
- `env_steps_per_update(config)`: the samples one update consumes (environment steps,
  completions, dataset rows): the x axis of every curve.
- `init(config, env, key, hparams) -> State`.
- `act(config, env, state, obs, key, *, greedy=False) -> action`: the learner's policy for a
  batch of observations, with everything it depends on (ε, exploration noise, observation
  statistics, the LoRA base) read from `state` and `env`; `greedy=True` gives the deterministic
  policy (argmax, the Gaussian mean, greedy decoding). `obs` is what the learner acts on: raw
  observations `[B, ...]` for the control learners; the prompt batch `(prompt_tokens [R, P],
  prompt_mask [R, P])` for the RLVR learners (`grpo`, `stale_grpo`), whose action is the
  `rljax.lm.model.sampling` completion; the bandit history `(actions [B, T], rewards [B, T], t)` for
  `dpt`. A recurrent learner (`ppo_rnn`) carries its core state in and out: `obs` is its
  `Input(obs, h, first)` and the action `(action, h')`. The training-time forms that return
  more (log-probabilities, values, Q) are private to each module.
- `evaluate(config, env, state, key) -> dict[str, jax.Array]`: scalars measuring the current
  policy, jittable: the control learners' greedy episode statistics in
  `rljax.agents.learner.EVAL_ENVS` fresh environments of `env.max_steps` steps each
  (`episode/return`, `episode/length`, `episode/count`); the RLVR learners' held-out pass@1
  and mean reward on the task data's evaluation table; the offline learners' agreement with the
  dataset's actions and greedy value on its states. `rljax.train.population.Spec(evaluate=
  "learner")` runs it on every learner after every chunk.
- `update(config, env, state) -> (state, metrics)`: one update, pure and jittable; metrics are
  a flat dict of scalars with namespaced keys.
- `train_chunk(config, env, state, num_updates) -> (state, metrics[num_updates])`: a `lax.scan`
  of updates, the unit the host loop (`rljax.train.loop`) calls, vmapped over learners.

`env` is what the learner acts in: a gymnax environment for the control agents, the task data
(`grpo.TaskData`: base model and problem tables) for the RLVR learner, the fixed dataset
(`rljax.offline_data.Dataset`) for the offline learners (`offline`: BC, DQN, QR-DQN, CQL, BCQ,
CRR), which never touch an environment while training.

A new learner is its module, its config file and one line in the `LEARNERS` dict of
`experiments/train.py`; `rljax.train.population.run` takes any module that is a `Learner`.
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import jax


class Learner(Protocol):
    """The module-level interface of a learner: the type `rljax.train.population` takes.

    Everything the pipeline calls is here; go-to-definition on a member leads to each
    learner's own version.
    """

    Config: type
    Hparams: type[NamedTuple]
    State: type[NamedTuple]
    HPARAM_RULES: dict[str, tuple[Callable[[float], bool], str]]

    def validate(self, config: Any) -> None: ...

    def env_steps_per_update(self, config: Any) -> int: ...

    def init(self, config: Any, env: Any, key: jax.Array, hparams: Any) -> Any: ...

    def act(
        self, config: Any, env: Any, state: Any, obs: Any, key: jax.Array, *, greedy: bool = False
    ) -> Any: ...

    def evaluate(
        self, config: Any, env: Any, state: Any, key: jax.Array
    ) -> dict[str, jax.Array]: ...

    def update(self, config: Any, env: Any, state: Any) -> tuple[Any, dict[str, jax.Array]]: ...

    def train_chunk(
        self, config: Any, env: Any, state: Any, num_updates: int
    ) -> tuple[Any, dict[str, jax.Array]]: ...


MEMBERS = (
    "Config", "Hparams", "HPARAM_RULES", "State", "validate", "env_steps_per_update", "init",
    "act", "evaluate", "update", "train_chunk",
)  # fmt: skip
