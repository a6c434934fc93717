"""PQN (parallel Q-learning, no replay, no target network) on gymnax classic control.

    python experiments/train.py --config=configs/pqn.py:CartPole-v1
    python experiments/train.py --config=configs/pqn.py:Acrobot-v1
    python experiments/train.py --config=configs/pqn.py:CartPole-v1 --config.sweep.lambda_=0,0.95

Measured 2026-11-25 (2-core CPU shared with other jobs, load 30-45; 16 seeds each, final return
IQM [95% CI]): CartPole-v1 499.1 [447.9, 500.0] in 1171 s (compile 76 s); Acrobot-v1
-96.1 [-99.6, -91.9] in 858 s (compile 118 s). Details: docs/learners_pqn_iqn.md.

The argument picks the environment (default CartPole-v1). The defaults follow the paper's
classic-control setup (Gallici et al. 2024; purejaxql's CartPole config: 32 envs x 64 steps,
4 epochs of 16 minibatches, LayerNorm, λ = 0.95, rewards x 0.1, lr annealed) with 128-wide
layers instead of 256 and a final ε of 0.05 instead of 0.2 (the final return is measured on the
training episodes). Results: docs/learners_pqn_iqn.md.
"""

import ml_collections

from rljax import cli

# Per-environment overrides of the defaults in get_config. Budgets are env steps per learner.
ENV_OVERRIDES = {
    "CartPole-v1": {},
    # -1 per step until the goal: near-greedy training episodes (ε 0.01) by the end.
    "Acrobot-v1": {"hparams.eps_end": 0.01},
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    """Returns the PQN config for the environment named by ``arg``."""
    env_name = arg or "CartPole-v1"
    if env_name not in ENV_OVERRIDES:
        raise ValueError(f"configs/pqn.py:{env_name} is unknown; valid: {', '.join(ENV_OVERRIDES)}")
    c = ml_collections.ConfigDict()
    c.learner = "pqn"  # which learner module runs (see experiments/train.py LEARNERS)
    c.env_name = env_name  # gymnax environment
    c.seed = 0  # seed s of each grid point starts from learner_key(seed, s) (rljax.agents.learner)
    c.num_seeds = 16  # seeds per grid point, trained together under one vmap
    c.total_timesteps = 499_712  # env steps per learner: 244 updates of 32 x 64
    c.chunk_updates = 61  # updates per compiled call between host syncs (4 chunks)
    c.checkpoint_every = 2  # chunks between periodic checkpoints
    c.resume = False  # continue from the latest checkpoint in --workdir
    c.progress = True  # show a progress bar

    c.pqn = ml_collections.ConfigDict()  # static settings: rljax.agents.pqn.Config
    c.pqn.num_envs = 32  # parallel environments per learner
    c.pqn.rollout_steps = 64  # batched env steps per update (T of the λ-returns)
    c.pqn.num_epochs = 4  # passes over each rollout
    c.pqn.num_minibatches = 16  # must divide num_envs * rollout_steps
    c.pqn.hidden = (128, 128)  # MLP widths
    c.pqn.activation = "relu"  # tanh | relu | gelu | swish
    c.pqn.norm = "layer_norm"  # layer_norm | none
    c.pqn.anneal_lr = True  # linear learning-rate decay to 0

    c.hparams = ml_collections.ConfigDict()  # array leaves: can be swept in one program
    c.hparams.lr = 1e-4  # Adam step size
    c.hparams.gamma = 0.99  # discount
    c.hparams.lambda_ = 0.95  # Q(λ) trace
    c.hparams.eps_start = 1.0  # initial exploration rate
    c.hparams.eps_end = 0.05  # final exploration rate
    c.hparams.eps_decay_steps = 100_000  # env steps of the linear epsilon decay
    c.hparams.max_grad_norm = 10.0  # global gradient-norm clip
    c.hparams.reward_scale = 0.1  # rewards are scaled before the returns

    c.mesh = ml_collections.ConfigDict()  # device mesh and sharding (rljax.parallel)
    c.mesh.shape = ()  # devices per axis, e.g. (4, 2); () = --cpu_devices' ("seeds",) layout
    c.mesh.axes = ()  # axis names, e.g. ("seeds", "data")
    c.mesh.rules = "seeds"  # seeds | seeds_and_envs | seeds_envs_and_replay (experiments/train.py)

    # Comma-separated values train as a grid together with the seeds, e.g. lr="1e-4,3e-4".
    c.sweep = ml_collections.ConfigDict({k: "" for k in c.hparams})

    return cli.apply_overrides(c, ENV_OVERRIDES[env_name])
