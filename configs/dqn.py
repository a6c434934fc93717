"""DQN family on gymnax classic control and MinAtar.

    python experiments/train.py --config=configs/dqn.py:CartPole-v1
    python experiments/train.py --config=configs/dqn.py:CartPole-v1 --config.dqn.head=hl_gauss
    python experiments/train.py --config=configs/dqn.py:Acrobot-v1 --config.dqn.double=True

The argument picks the environment (default CartPole-v1). The value head is a plug-in:
``--config.dqn.head`` = mse | huber | two_hot | hl_gauss | c51 | qr (set v_min/v_max to the
environment's discounted-return range for the categorical heads). Measured results and run times
(2-core CPU, shared) are in docs/value_based.md.
"""

import ml_collections

from rljax import cli

# Per-environment overrides of the defaults in get_config. Budgets are env steps per learner.
ENV_OVERRIDES = {
    # The classic purejaxrl/CleanRL setup: 4 seeds x 500k steps. The Huber threshold covers
    # the value range [0, 100]: every non-terminal step pays +1 whatever the action, so the only
    # signal about the actions is in terminal transitions, whose TD errors are the size of Q
    # (tens). At the Atari δ = 1 their gradient is capped at any other sample's: every learner
    # ended at 9.6 (below random, ~22) with Q diverging (docs/value_based.md).
    "CartPole-v1": {"dqn.huber_delta": 100.0},
    # Rewards -1 per step until the goal; values in [-100, 0].
    "Acrobot-v1": {
        "dqn.v_min": -100.0,
        "dqn.v_max": 0.0,
        "dqn.head": "huber",
        "dqn.double": True,
    },
    # Sparse reward, long effective horizon: -1 per step for up to 200 steps.
    "MountainCar-v0": {
        "total_timesteps": 1_000_000,
        "dqn.v_min": -100.0,
        "dqn.v_max": 0.0,
        "dqn.head": "huber",
        "dqn.double": True,
        "dqn.n_step": 3,
    },
}
for _game in ("Breakout", "SpaceInvaders", "Asterix", "Freeway"):
    ENV_OVERRIDES[f"{_game}-MinAtar"] = {
        "total_timesteps": 2_000_000,
        "dqn.num_envs": 16,
        "dqn.buffer_size": 100_000,
        "dqn.batch_size": 64,
        "dqn.learning_starts": 16_000,
        "dqn.target_update_every": 1_600,
        "dqn.hidden": (256, 256),
        "dqn.head": "huber",
        "dqn.double": True,
        "dqn.v_min": 0.0,
        "dqn.v_max": 50.0,
        "hparams.lr": 1e-4,
        "hparams.eps_decay_steps": 500_000,
    }


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    """Returns the DQN config for the environment named by ``arg``."""
    env_name = arg or "CartPole-v1"
    if env_name not in ENV_OVERRIDES:
        raise ValueError(f"configs/dqn.py:{env_name} is unknown; valid: {', '.join(ENV_OVERRIDES)}")
    c = ml_collections.ConfigDict()
    c.learner = "dqn"  # which learner module runs (see experiments/train.py LEARNERS)
    c.env_name = env_name  # gymnax environment
    c.seed = 0  # seed s of each grid point starts from learner_key(seed, s) (rljax.agents.learner)
    c.num_seeds = 4  # seeds per grid point, trained together under one vmap
    c.total_timesteps = 500_000  # env steps per learner
    c.chunk_updates = 0  # updates per compiled call between host syncs (0 = total/16)
    c.checkpoint_every = 4  # chunks between periodic checkpoints
    c.resume = False  # continue from the latest checkpoint in --workdir
    c.progress = True  # show a progress bar
    c.mesh = ml_collections.ConfigDict()  # device mesh and sharding (rljax.parallel)
    c.mesh.shape = ()  # devices per axis, e.g. (4, 2); () = --cpu_devices' ("seeds",) layout
    c.mesh.axes = ()  # axis names, e.g. ("seeds", "data")
    c.mesh.rules = "seeds"  # seeds | seeds_and_envs | seeds_envs_and_replay (experiments/train.py)

    c.dqn = ml_collections.ConfigDict()  # static settings: rljax.agents.dqn.Config
    c.dqn.num_envs = 10  # parallel environments per learner
    c.dqn.rollout_steps = 1  # batched env steps per update
    c.dqn.grad_steps = 1  # gradient steps per update
    c.dqn.buffer_size = 10_000  # replay capacity (transitions)
    c.dqn.batch_size = 128  # transitions per gradient step
    c.dqn.learning_starts = 10_000  # env steps before learning
    c.dqn.target_update_every = 500  # env steps between target copies
    c.dqn.tau = 1.0  # 1 = hard copy
    c.dqn.head = "mse"  # mse | huber | two_hot | hl_gauss | c51 | qr
    c.dqn.num_bins = 51  # atoms / quantiles of the distributional and classification heads
    c.dqn.v_min = 0.0  # support of the categorical heads
    c.dqn.v_max = 100.0
    c.dqn.double = False  # Double DQN
    c.dqn.n_step = 1  # n-step returns
    c.dqn.huber_delta = 1.0  # Huber threshold (also QR's kappa)
    c.dqn.eps_schedule = "linear"  # linear | exponential
    c.dqn.hidden = (120, 84)  # MLP widths
    c.dqn.activation = "relu"  # tanh | relu | gelu | swish
    c.dqn.max_grad_norm = 0.0  # 0 = no clipping
    c.dqn.anneal_lr = False  # linear learning-rate decay

    c.hparams = ml_collections.ConfigDict()  # array leaves: can be swept in one program
    c.hparams.lr = 2.5e-4  # Adam step size
    c.hparams.gamma = 0.99  # discount
    c.hparams.eps_start = 1.0  # initial exploration rate
    c.hparams.eps_end = 0.05  # final exploration rate
    c.hparams.eps_decay_steps = 250_000  # env steps of the epsilon schedule
    c.hparams.hl_sigma = 0.75  # HL-Gauss sigma in bin widths
    c.hparams.reward_noise = 0.0  # std of reward noise in the targets (ablation probe)

    # Comma-separated values train as a grid together with the seeds, e.g. lr="1e-4,3e-4".
    c.sweep = ml_collections.ConfigDict({k: "" for k in c.hparams})

    return cli.apply_overrides(c, ENV_OVERRIDES[env_name])
