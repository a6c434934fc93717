"""PPO on gymnax classic control.

    python experiments/train.py --config=configs/ppo.py:CartPole-v1
    python experiments/train.py --config=configs/ppo.py:Acrobot-v1 --config.sweep.lr=1e-4,3e-4,1e-3

The argument picks the environment (default CartPole-v1). Each environment's block below states
what it reaches and how long it takes on a 2-core laptop CPU (measured; see README).
"""

import dataclasses

import ml_collections

from rljax import cli
from rljax.agents import ppo

# Per-environment overrides of the defaults in get_config. Budgets are env steps per learner.
ENV_OVERRIDES = {
    # 8 seeds x 500k steps; every seed ends at 500 (see README results table). One epoch of
    # larger steps: PPO's cost here is the SGD epochs, not the environment. 488 updates in 8
    # chunks of 61 (the default total/16 would give 61 chunks of 8: 61 host round trips and 15
    # periodic checkpoints, seconds of a 15-second job); one periodic checkpoint halfway.
    "CartPole-v1": {
        "ppo.num_envs": 8,
        "ppo.num_steps": 128,
        "ppo.num_epochs": 1,
        "ppo.num_minibatches": 8,
        "hparams.lr": 1e-3,
        "chunk_updates": 61,
        "checkpoint_every": 4,
    },
    # 8 seeds x 500k steps; passes -100 at ~200k and plateaus near -85.
    "Acrobot-v1": {"total_timesteps": 500_000, "ppo.num_envs": 16, "ppo.num_steps": 64},
    # Sparse-reward exploration problem; PPO with this budget rarely reaches the goal (README).
    "MountainCar-v0": {"total_timesteps": 1_000_000, "ppo.num_envs": 16, "ppo.num_steps": 64},
    # 8 seeds x 2M steps, observation normalization, shorter horizon.
    "Pendulum-v1": {
        "total_timesteps": 2_000_000,
        "ppo.num_envs": 16,
        "ppo.num_steps": 128,
        "ppo.num_minibatches": 32,
        "ppo.num_epochs": 10,
        "ppo.normalize_obs": True,
        "hparams.lr": 1e-3,
        "hparams.gamma": 0.95,
        "hparams.ent_coef": 0.0,
    },
    "MountainCarContinuous-v0": {
        "total_timesteps": 1_000_000,
        "ppo.num_envs": 16,
        "ppo.num_steps": 128,
        "ppo.normalize_obs": True,
        "hparams.ent_coef": 0.0,
    },
}
# The brax extra (pip install -e ".[brax]"); 1000-step episodes, +1 per step upright.
ENV_OVERRIDES["brax/inverted_pendulum"] = {
    "num_seeds": 4,
    "total_timesteps": 200_000,
    "ppo.num_envs": 16,
    "ppo.num_steps": 64,
    "ppo.num_epochs": 10,
    "ppo.num_minibatches": 8,
    "ppo.normalize_obs": True,
    "hparams.lr": 3e-4,
    "hparams.ent_coef": 0.0,
}
# The feed-forward baseline of configs/ppo_rnn.py on CartPole with the velocities hidden: the
# shipped CartPole-v1 settings (docs/learners_recurrent.md).
ENV_OVERRIDES["CartPole-NoVel-v1"] = ENV_OVERRIDES["CartPole-v1"]
# ... and on a memory task (a cue to recall 5 steps later; chance level: a return of 0).
ENV_OVERRIDES["MemoryChain-bsuite"] = {"total_timesteps": 100_352}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    """Returns the PPO config for the environment named by ``arg``."""
    env_name = arg or "CartPole-v1"
    if env_name not in ENV_OVERRIDES:
        raise ValueError(f"configs/ppo.py:{env_name} is unknown; valid: {', '.join(ENV_OVERRIDES)}")
    c = ml_collections.ConfigDict()
    c.learner = "ppo"  # which learner module runs (see experiments/train.py LEARNERS)
    c.env_name = env_name  # gymnax environment
    c.seed = 0  # seed s of each grid point starts from learner_key(seed, s) (rljax.agents.learner)
    c.num_seeds = 8  # seeds per grid point, trained together under one vmap
    c.total_timesteps = 500_000  # env steps per learner
    c.chunk_updates = 0  # updates per compiled call between host syncs (0 = total/16)
    c.checkpoint_every = 4  # chunks between periodic checkpoints
    c.resume = False  # continue from the latest checkpoint in --workdir
    c.progress = True  # show a progress bar
    c.mesh = ml_collections.ConfigDict()  # device mesh and sharding (rljax.parallel)
    c.mesh.shape = ()  # devices per axis, e.g. (4, 2); () = --cpu_devices' ("seeds",) layout
    c.mesh.axes = ()  # axis names, e.g. ("seeds", "data")
    c.mesh.rules = "seeds"  # seeds | seeds_and_envs | seeds_envs_and_replay (experiments/train.py)

    # Static settings: the defaults of rljax.agents.ppo.Config (one place; each field's comment
    # is there). num_updates is set from total_timesteps.
    c.ppo = ml_collections.ConfigDict(
        {f.name: f.default for f in dataclasses.fields(ppo.Config) if f.name != "num_updates"}
    )

    c.hparams = ml_collections.ConfigDict()  # array leaves: can be swept in one program
    c.hparams.lr = 2.5e-4  # Adam step size
    c.hparams.clip_eps = 0.2  # PPO clip range
    c.hparams.ent_coef = 0.01  # entropy bonus
    c.hparams.vf_coef = 0.5  # value loss weight
    c.hparams.gamma = 0.99  # discount
    c.hparams.gae_lambda = 0.95  # GAE lambda

    # Comma-separated values train as a grid together with the seeds, e.g. lr="1e-4,3e-4".
    c.sweep = ml_collections.ConfigDict({k: "" for k in c.hparams})

    return cli.apply_overrides(c, ENV_OVERRIDES[env_name])
