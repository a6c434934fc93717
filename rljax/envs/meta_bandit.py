"""A lifetime of Bernoulli-bandit pulls, with or without recurring structure (#214).

An episode is one lifetime of ``H`` pulls of ``K`` Bernoulli arms. At the lifetime's start the
arm means ``μ [K]`` are drawn uniformly from [0, 1]; a pull of arm ``a_t`` pays
``r_t ~ Bernoulli(μ_a_t)``.

* Structure on (``redraw=False``): ``μ`` persists for the whole lifetime, so what a pull reveals
  about an arm stays true, and trying arms early can pay later (Rentschler & Roberts 2025,
  "Exploitation Is All You Need... for Exploration", #214: recurring environmental structure).
* Structure off (``redraw=True``): ``μ`` is redrawn after every pull, so a pull says nothing
  about the next one and every arm is worth ``E[μ] = 1/2`` at every pull: exploring has no value.

The observation is ``[one-hot(a_{t-1}) (K), r_{t-1}, t / H]`` (zeros for the action and reward
before the first pull): a policy without memory sees one pull back, a recurrent one can keep all.
The lifetime ends (``terminated``, no bootstrap) after ``H`` pulls; gymnax resets it with new
means. ``EnvState.means`` holds the means of the coming pull, so the pseudo-regret of the pull
``a_t`` is ``max μ − μ_a_t`` with ``μ`` read from the state the pull was made in.
"""

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

# Registered names -> (arms K, redraw). Both live a lifetime of EnvParams.max_steps_in_episode.
NAMES = {
    "MetaBandit-K5-v0": (5, False),  # structure on: means fixed for the lifetime
    "MetaBandit-K5-Redraw-v0": (5, True),  # structure off: means redrawn after every pull
}
HORIZON = 20  # pulls per lifetime (the default EnvParams)


@struct.dataclass
class EnvState(environment.EnvState):
    means: jax.Array  # [K] arm means of the coming pull
    last_action: jax.Array  # arm pulled last (int32; 0 before the first pull, unseen then)
    last_reward: jax.Array  # reward of the last pull (float32; 0 before the first pull)
    time: jax.Array  # pulls made in this lifetime (int32)


@struct.dataclass
class EnvParams(environment.EnvParams):
    max_steps_in_episode: int = HORIZON  # H: pulls per lifetime


class MetaBandit(environment.Environment[EnvState, EnvParams]):
    """``K`` Bernoulli arms for a lifetime of ``H`` pulls; ``redraw`` removes the structure."""

    def __init__(self, num_arms: int, redraw: bool):
        super().__init__()
        if not isinstance(num_arms, int) or num_arms < 2:
            raise ValueError(f"num_arms={num_arms!r} is invalid; allowed: an integer >= 2")
        self.num_arms = num_arms
        self.redraw = bool(redraw)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        reward_key, means_key = jax.random.split(key)
        mu_a = state.means[action]
        reward = jax.random.bernoulli(reward_key, mu_a).astype(jnp.float32)
        means = state.means
        if self.redraw:  # a static choice: the structure-off task draws new means every pull
            means = jax.random.uniform(means_key, (self.num_arms,))
        state = EnvState(
            means=means,
            last_action=jnp.asarray(action, jnp.int32),
            last_reward=reward,
            time=state.time + 1,
        )
        terminated = self.is_terminated(state, params)
        info = {"discount": self.discount(state, params)}
        return jax.lax.stop_gradient(self.get_obs(state, params)), state, reward, terminated, info

    def reset_env(self, key, params: EnvParams):
        state = EnvState(
            means=jax.random.uniform(key, (self.num_arms,)),
            last_action=jnp.zeros((), jnp.int32),
            last_reward=jnp.zeros((), jnp.float32),
            time=jnp.zeros((), jnp.int32),
        )
        return self.get_obs(state, params), state

    def get_obs(self, state: EnvState, params: EnvParams, key=None) -> jax.Array:
        started = (state.time > 0).astype(jnp.float32)  # no pull yet: action and reward unseen
        onehot = jax.nn.one_hot(state.last_action, self.num_arms) * started
        t = state.time.astype(jnp.float32) / params.max_steps_in_episode
        return jnp.concatenate([onehot, jnp.stack([state.last_reward * started, t])])

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.time >= params.max_steps_in_episode

    @property
    def name(self) -> str:
        return f"MetaBandit-K{self.num_arms}{'-Redraw' if self.redraw else ''}"

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(self.num_arms)

    def observation_space(self, params: EnvParams) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (self.num_arms + 2,), jnp.float32)


def make(name: str):
    """``(env, params)`` for a name in ``NAMES``; the caller checked the name."""
    num_arms, redraw = NAMES[name]
    return MetaBandit(num_arms, redraw), EnvParams()
