"""brax tasks behind the gymnax interface, so every rljax learner and the one rollout take them.

A brax environment (``brax.envs.get_environment``, no wrappers) has no time limit and no
automatic reset: ``reset(rng) -> State`` and ``step(State, action) -> State`` with ``done`` set
on termination (the pole fell, the robot is unhealthy). ``BraxTask`` wraps it as a gymnax
``Environment``: gymnax's ``step`` then adds the time limit (``is_truncated``: ``time >=
max_steps_in_episode``), the automatic reset and ``info["final_observation"]``, so
``rljax.envs.gymnax_env.step`` returns the true next observation on truncation like it does for
gymnax tasks. Actions are in ``[-1, 1]`` per dimension (brax scales them to the actuators'
ranges); ``gymnax_env.step`` clips to those bounds first.

brax is an optional extra (``pip install -e ".[brax]"``) and is imported only when a brax task is
built. Names: ``brax/<task>`` (the backend in ``DEFAULT_BACKEND``, else brax's own default for
the task) or ``brax/<task>/<backend>``.
"""

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

TASKS = (
    "ant",
    "fast",
    "halfcheetah",
    "hopper",
    "humanoid",
    "humanoidstandup",
    "inverted_pendulum",
    "inverted_double_pendulum",
    "pusher",
    "reacher",
    "swimmer",
    "walker2d",
)
# brax 0.14's physics pipelines (brax.envs.base.PipelineEnv).
BACKENDS = ("generalized", "positional", "spring", "mjx")
# The backend a bare ``brax/<task>`` uses where it is not brax's own default: the fastest on CPU
# measured (docs/learners_offpolicy.md, section "brax").
DEFAULT_BACKEND = {"inverted_pendulum": "spring"}
EPISODE_LENGTH = 1000  # brax's usual time limit (steps of the wrapped task)
NAMES = tuple(f"brax/{t}" for t in TASKS) + tuple(f"brax/{t}/{b}" for t in TASKS for b in BACKENDS)
MISSING = 'brax is not installed; install the optional extra: pip install -e ".[brax]"'


@struct.dataclass
class State:
    """The brax ``State`` (physics, obs, reward, done, metrics, info) and the step count."""

    brax_state: object
    time: jax.Array  # steps taken in this episode (int32)


class BraxTask(environment.Environment):
    """A brax environment as a gymnax environment with a time limit and automatic reset."""

    def __init__(self, brax_env, obs_dim: int, action_dim: int):
        super().__init__()
        self.brax_env = brax_env
        self.obs_dim = obs_dim
        self.action_dim = action_dim

    @property
    def default_params(self) -> environment.EnvParams:
        return environment.EnvParams(max_steps_in_episode=EPISODE_LENGTH)

    def reset_env(self, key, params):
        brax_state = _as_arrays(self.brax_env.reset(key))
        return brax_state.obs, State(brax_state, jnp.zeros((), jnp.int32))

    def step_env(self, key, state, action, params):
        del key, params  # the brax tasks step deterministically
        brax_state = _as_arrays(self.brax_env.step(state.brax_state, action))
        terminated = brax_state.done > 0.5
        new_state = State(brax_state, state.time + 1)
        return brax_state.obs, new_state, brax_state.reward, terminated, {}

    @property
    def name(self) -> str:
        return f"Brax({type(self.brax_env).__name__}, {self.brax_env.backend})"

    @property
    def num_actions(self) -> int:
        return self.action_dim

    def action_space(self, params):
        return spaces.Box(-1.0, 1.0, (self.action_dim,), jnp.float32)

    def observation_space(self, params):
        return spaces.Box(-jnp.inf, jnp.inf, (self.obs_dim,), jnp.float32)


def _as_arrays(brax_state):
    """Reward and done as float32 arrays: some brax tasks return a Python float reward from
    ``step`` but an array from ``reset``, and the automatic reset selects leaf by leaf."""
    return brax_state.replace(
        reward=jnp.asarray(brax_state.reward, jnp.float32),
        done=jnp.asarray(brax_state.done, jnp.float32),
        obs=jnp.asarray(brax_state.obs, jnp.float32),
    )


def parse(name: str) -> tuple[str, str | None]:
    """``"brax/<task>[/<backend>]"`` -> ``(task, backend or None)``.

    Raises:
      ValueError: for a name outside ``NAMES``, listing the tasks and backends.
    """
    if name not in NAMES:
        raise ValueError(
            f"env_name={name!r} is not a brax task; valid: brax/<task> or brax/<task>/<backend>"
            f" with task in {', '.join(TASKS)} and backend in {', '.join(BACKENDS)}"
        )
    parts = name.split("/")
    return parts[1], (parts[2] if len(parts) == 3 else None)


def make(name: str, *, episode_length: int = EPISODE_LENGTH):
    """``(BraxTask, gymnax EnvParams)`` for a name in ``NAMES``.

    Args:
      name: ``brax/<task>`` or ``brax/<task>/<backend>``.
      episode_length: time limit in steps (>= 1); the step that reaches it is truncated.

    Raises:
      ValueError: for an unknown name or a bad ``episode_length``.
      ImportError: when brax is not installed, naming the extra to install.
    """
    task, backend = parse(name)
    if episode_length < 1:
        raise ValueError(f"episode_length={episode_length} must be >= 1")
    try:
        from brax import envs as brax_envs
    except ImportError as err:
        raise ImportError(MISSING) from err
    backend = backend or DEFAULT_BACKEND.get(task)
    kwargs = {} if backend is None else {"backend": backend}
    brax_env = brax_envs.get_environment(task, **kwargs)
    obs = jax.eval_shape(brax_env.reset, jax.random.PRNGKey(0)).obs
    env = BraxTask(brax_env, int(obs.shape[-1]), int(brax_env.action_size))
    return env, environment.EnvParams(max_steps_in_episode=episode_length)
