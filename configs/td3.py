"""TD3, and DDPG as its preset, on gymnax classic control (continuous actions).

    python experiments/train.py --config=configs/td3.py:Pendulum-v1
    python experiments/train.py --config=configs/td3.py:ddpg-Pendulum-v1  # DDPG preset
    python experiments/train.py --config=configs/td3.py:MountainCarContinuous-v0

The argument picks the environment (default Pendulum-v1); the prefix ``ddpg-`` applies the DDPG
preset (one critic, no target smoothing, no actor delay). Measured results and run times
(2-core CPU, shared) are in docs/learners_offpolicy.md.
Pendulum-v1 (16 seeds x 40k env steps, 2026-11-28, commit 2788444): final-return IQM -143.2
[95% CI -164.5, -124.8], 14/16 seeds >= -200; 27 s compile + 269 s on the shared 2-core CPU.
DDPG (4 seeds x 40k, same day and commit): mean -163.4, 3/4 >= -200. MountainCarContinuous-v0
(4 seeds x 50k, 2026-11-25, before TD3's update became critic-only steps then one actor step):
one exploring episode reached the flag, the final policies do not (about -23).
"""

import ml_collections

from rljax import cli

# DDPG (Lillicrap et al. 2016) as a preset of TD3: what the three TD3 tricks switch off.
DDPG = {"td3.num_critics": 1, "td3.policy_delay": 1, "hparams.target_noise": 0.0}
# Per-environment overrides of the defaults in get_config. Budgets are env steps per learner.
ENV_OVERRIDES = {
    "Pendulum-v1": {},
    "MountainCarContinuous-v0": {"total_timesteps": 100_000, "hparams.explore_noise": 0.5},
    # The brax extra (pip install -e ".[brax]"); 1000-step episodes, +1 per step upright.
    "brax/inverted_pendulum": {"num_seeds": 4, "total_timesteps": 40_000},
}
PRESETS = {"": {}, "ddpg-": DDPG}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    """Returns the TD3 (or, for ``ddpg-<env>``, DDPG) config for the environment in ``arg``."""
    arg = arg or "Pendulum-v1"
    preset = "ddpg-" if arg.startswith("ddpg-") else ""
    env_name = arg[len(preset) :]
    if env_name not in ENV_OVERRIDES:
        valid = [p + e for p in PRESETS for e in ENV_OVERRIDES]
        raise ValueError(f"configs/td3.py:{arg} is unknown; valid: {', '.join(valid)}")
    c = ml_collections.ConfigDict()
    c.learner = "td3"  # which learner module runs (see experiments/train.py LEARNERS)
    c.env_name = env_name  # gymnax environment
    c.seed = 0  # seed s of each grid point starts from learner_key(seed, s) (rljax.agents.learner)
    c.num_seeds = 16  # seeds per grid point, trained together under one vmap
    c.total_timesteps = 40_000  # env steps per learner
    c.chunk_updates = 0  # updates per compiled call between host syncs (0 = total/16)
    c.checkpoint_every = 4  # chunks between periodic checkpoints
    c.resume = False  # continue from the latest checkpoint in --workdir
    c.progress = True  # show a progress bar

    c.td3 = ml_collections.ConfigDict()  # static settings: rljax.agents.td3.Config
    c.td3.num_envs = 4  # parallel environments per learner
    c.td3.rollout_steps = 1  # batched env steps per update
    c.td3.grad_steps = 2  # gradient steps per update (0.5 per env step)
    c.td3.buffer_size = 100_000  # replay capacity (transitions)
    c.td3.batch_size = 128  # transitions per gradient step
    c.td3.learning_starts = 1_000  # env steps of uniformly random actions
    c.td3.num_critics = 2  # 2 = clipped double Q; 1 = DDPG
    c.td3.policy_delay = 2  # critic steps per actor/target step; 1 = DDPG
    c.td3.hidden = (64, 64)  # MLP widths of actor and critics
    c.td3.activation = "relu"  # tanh | relu | gelu | swish

    c.hparams = ml_collections.ConfigDict()  # array leaves: can be swept in one program
    c.hparams.lr_actor = 1e-3  # Adam step size of the actor
    c.hparams.lr_critic = 1e-3  # Adam step size of the critics
    c.hparams.gamma = 0.99  # discount
    c.hparams.tau = 0.005  # Polyak rate of the target networks
    c.hparams.explore_noise = 0.1  # behaviour noise std (normalized actions)
    c.hparams.target_noise = 0.2  # target policy smoothing noise std; 0 = DDPG
    c.hparams.noise_clip = 0.5  # smoothing noise clipped to [-c, c]

    # Comma-separated values train as a grid together with the seeds, e.g. tau="0.005,0.01".
    c.sweep = ml_collections.ConfigDict({k: "" for k in c.hparams})

    return cli.apply_overrides(cli.apply_overrides(c, ENV_OVERRIDES[env_name]), PRESETS[preset])
