"""Environments: the gymnax adapter and the shared rollout."""

from rljax import prng_kernel
from rljax.envs.gymnax_env import (
    BRAX,
    CLASSIC_CONTROL,
    META_BANDIT,
    META_GRID,
    MINATAR,
    POMDP,
    SUPPORTED_ENVS,
    Env,
    EnvState,
    StepResult,
    make,
    reset,
    step,
    valid_names,
)
from rljax.envs.rollouts import (
    ObsNorm,
    RolloutState,
    episode_summary,
    normalize,
    obs_norm_init,
    obs_norm_update,
    rollout,
    rollout_init,
)

prng_kernel.install()  # random draws through the compiled Threefry kernel on CPU

__all__ = [
    "BRAX",
    "CLASSIC_CONTROL",
    "META_BANDIT",
    "META_GRID",
    "MINATAR",
    "POMDP",
    "SUPPORTED_ENVS",
    "Env",
    "EnvState",
    "ObsNorm",
    "RolloutState",
    "StepResult",
    "episode_summary",
    "make",
    "normalize",
    "obs_norm_init",
    "obs_norm_update",
    "reset",
    "rollout",
    "rollout_init",
    "step",
    "valid_names",
]
