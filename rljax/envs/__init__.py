"""Environments: the gymnax adapter and the shared rollout."""

from rljax.envs.gymnax_env import (
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

__all__ = [
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
]
