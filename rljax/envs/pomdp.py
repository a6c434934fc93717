"""Partially observable tasks: classic control with the velocities hidden, and gymnax's memory
and meta-RL environments.

Hiding the velocities (``<Name>-NoVel-<version>``) leaves positions and angles only, so a
memoryless policy cannot tell which way the pole or the car is moving; a recurrent one can infer
it from two consecutive observations. This is the "flickering / velocity-masked" benchmark of
Heess et al. 2015 ("Memory-based control with recurrent neural networks") and Meng et al. 2021
("Memory-based Deep Reinforcement Learning for POMDPs"). The dynamics, rewards and time limits
are the wrapped environment's, unchanged.
"""

import gymnax
import jax
import jax.numpy as jnp
from gymnax.environments import environment, spaces

# Hidden-velocity variant -> (wrapped gymnax environment, observation dims that stay visible).
HIDDEN_VELOCITY = {
    "CartPole-NoVel-v1": ("CartPole-v1", (0, 2)),  # cart position x, pole angle θ
    "Acrobot-NoVel-v1": ("Acrobot-v1", (0, 1, 2, 3)),  # cos/sin of both joint angles
    "MountainCar-NoVel-v0": ("MountainCar-v0", (0,)),  # car position
    "Pendulum-NoVel-v1": ("Pendulum-v1", (0, 1)),  # cos θ, sin θ
}
# gymnax environments that need memory: a cue shown once (MemoryChain), a goal to find again
# within an episode (MetaMaze), arm statistics to learn within an episode (BernoulliBandit).
MEMORY = ("MemoryChain-bsuite", "MetaMaze-misc", "BernoulliBandit-misc")
NAMES = (*HIDDEN_VELOCITY, *MEMORY)


class HideVelocity(environment.Environment):
    """A gymnax environment whose observations keep only the dims ``keep``.

    ``obs_t' = obs_t[keep]``, for the reset and step observations alike (and so for gymnax's
    ``info["final_observation"]``, which is the step observation before the automatic reset).
    """

    def __init__(self, env: environment.Environment, keep: tuple[int, ...]):
        super().__init__()
        self.env = env
        self.keep = keep

    @property
    def default_params(self):
        return self.env.default_params

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = self.env.step_env(key, state, action, params)
        return self._hide(obs), state, reward, terminated, info

    def reset_env(self, key, params):
        obs, state = self.env.reset_env(key, params)
        return self._hide(obs), state

    def is_truncated(self, state, params) -> jax.Array:
        return self.env.is_truncated(state, params)

    def _hide(self, obs: jax.Array) -> jax.Array:
        return obs[jnp.asarray(self.keep)]

    @property
    def name(self) -> str:
        return f"HideVelocity({self.env.name})"

    @property
    def num_actions(self) -> int:
        return self.env.num_actions

    def action_space(self, params):
        return self.env.action_space(params)

    def observation_space(self, params):
        space = self.env.observation_space(params)
        idx = jnp.asarray(self.keep)
        low = jnp.broadcast_to(space.low, space.shape)[idx]
        high = jnp.broadcast_to(space.high, space.shape)[idx]
        return spaces.Box(low, high, (len(self.keep),), space.dtype)


def make(name: str):
    """``(gymnax env, params)`` for a name in ``NAMES``; the caller checked the name."""
    if name in HIDDEN_VELOCITY:
        base, keep = HIDDEN_VELOCITY[name]
        env, params = gymnax.make(base)
        return HideVelocity(env, keep), params
    return gymnax.make(name)
