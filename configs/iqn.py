"""IQN (implicit quantile networks) on gymnax classic control: DQN with the ``iqn`` value head.

    python experiments/train.py --config=configs/iqn.py:CartPole-v1
    python experiments/train.py --config=configs/iqn.py:Acrobot-v1

Measured on the 2-core CPU shared with other jobs, 16 seeds each, final return IQM [95% CI]:
CartPole-v1 (2026-11-28, commit bf38fb8, lr 1e-3, load 6-9) 500.0 [496.9, 500.0], 16/16 seeds
>= 475, in 1298 s (compile 35 s); at lr 5e-4 it had been 448.8 [382.2, 494.1] (2026-11-25).
Acrobot-v1 (2026-11-25, load 30-45) -96.4 [-114.3, -93.7] in 1503 s (compile 116 s). Details:
docs/learners_pqn_iqn.md.

The argument picks the environment (default CartPole-v1). The learner is
``rljax.agents.dqn`` with ``q_heads.IQN``: K = ``dqn.num_bins`` fractions τ ~ U(0, 1) per state
for the online network and K independent τ' for the target, the quantile-Huber loss over them
(``rljax.losses.distributional.implicit_quantile_huber``, κ = ``dqn.huber_delta``), greedy
actions on the mean over the K midpoint fractions. Results: docs/learners_pqn_iqn.md.
"""

import ml_collections

from rljax import cli

# Per-environment overrides of the defaults in get_config. Budgets are env steps per learner.
ENV_OVERRIDES = {
    # lr 1e-3: in a 4-seed pilot (lr 2.5e-4 / 5e-4 / 1e-3, 150k steps) only 1e-3 ended at >= 475 on
    # every seed (final 444.4 / 416.3 / 497.8 mean); see docs/learners_pqn_iqn.md.
    "CartPole-v1": {"hparams.lr": 1e-3},
    # Measured with a quarter of CartPole's compute per env step: K = 4 fractions, one gradient
    # step per 20 env steps, Polyak 0.02 per gradient step.
    "Acrobot-v1": {
        "dqn.rollout_steps": 2,
        "dqn.target_update_every": 20,
        "dqn.tau": 0.02,
        "dqn.num_bins": 4,
    },
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    """Returns the IQN config for the environment named by ``arg``."""
    env_name = arg or "CartPole-v1"
    if env_name not in ENV_OVERRIDES:
        raise ValueError(f"configs/iqn.py:{env_name} is unknown; valid: {', '.join(ENV_OVERRIDES)}")
    c = ml_collections.ConfigDict()
    c.learner = "dqn"  # which learner module runs (see experiments/train.py LEARNERS)
    c.env_name = env_name  # gymnax environment
    c.seed = 0  # seed s of each grid point starts from learner_key(seed, s) (rljax.agents.learner)
    c.num_seeds = 16  # seeds per grid point, trained together under one vmap
    c.total_timesteps = 150_000  # env steps per learner
    c.chunk_updates = 0  # updates per compiled call between host syncs (0 = total/16)
    c.checkpoint_every = 4  # chunks between periodic checkpoints
    c.resume = False  # continue from the latest checkpoint in --workdir
    c.progress = True  # show a progress bar

    c.dqn = ml_collections.ConfigDict()  # static settings: rljax.agents.dqn.Config
    c.dqn.num_envs = 10  # parallel environments per learner
    c.dqn.rollout_steps = 1  # batched env steps per update (one gradient step each)
    c.dqn.grad_steps = 1  # gradient steps per update
    c.dqn.buffer_size = 20_000  # replay capacity (transitions)
    c.dqn.batch_size = 64  # transitions per gradient step
    c.dqn.learning_starts = 2_000  # env steps before learning
    c.dqn.target_update_every = 10  # env steps between target copies
    c.dqn.tau = 0.01  # Polyak rate per target update (1 = hard copy)
    c.dqn.head = "iqn"  # the implicit-quantile head (any q_heads.HEADS name works here)
    c.dqn.num_bins = 8  # IQN: fractions τ sampled per state (K = N = N')
    c.dqn.v_min = 0.0  # support of the categorical heads (unused by IQN)
    c.dqn.v_max = 100.0
    c.dqn.double = False  # Double DQN (the online network, its own τ draw, picks a*)
    c.dqn.n_step = 3  # n-step returns
    c.dqn.huber_delta = 10.0  # IQN's kappa
    c.dqn.eps_schedule = "linear"  # linear | exponential
    c.dqn.hidden = (64, 64)  # MLP torso widths (and the width after the τ merge)
    c.dqn.activation = "relu"  # tanh | relu | gelu | swish
    c.dqn.max_grad_norm = 10.0  # 0 = no clipping
    c.dqn.anneal_lr = False  # linear learning-rate decay

    c.hparams = ml_collections.ConfigDict()  # array leaves: can be swept in one program
    c.hparams.lr = 5e-4  # Adam step size
    c.hparams.gamma = 0.99  # discount
    c.hparams.eps_start = 1.0  # initial exploration rate
    c.hparams.eps_end = 0.01  # final exploration rate
    c.hparams.eps_decay_steps = 50_000  # env steps of the epsilon schedule
    c.hparams.hl_sigma = 0.75  # HL-Gauss sigma in bin widths (unused by IQN)
    c.hparams.reward_noise = 0.0  # std of reward noise in the targets (ablation probe)

    c.mesh = ml_collections.ConfigDict()  # device mesh and sharding (rljax.parallel)
    c.mesh.shape = ()  # devices per axis, e.g. (4, 2); () = --cpu_devices' ("seeds",) layout
    c.mesh.axes = ()  # axis names, e.g. ("seeds", "data")
    c.mesh.rules = "seeds"  # seeds | seeds_and_envs | seeds_envs_and_replay (experiments/train.py)

    # Comma-separated values train as a grid together with the seeds, e.g. lr="1e-4,3e-4".
    c.sweep = ml_collections.ConfigDict({k: "" for k in c.hparams})

    return cli.apply_overrides(c, ENV_OVERRIDES[env_name])
