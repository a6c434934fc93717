"""Recurrent PPO (GRU core, truncated BPTT) on partially observable gymnax tasks.

    python experiments/train.py --config=configs/ppo_rnn.py:CartPole-NoVel-v1
    python experiments/train.py --config=configs/ppo_rnn.py:MemoryChain-bsuite
    python experiments/train.py --config=configs/ppo_rnn.py:CartPole-NoVel-v1 \
        --config.sweep.lr=3e-4,1e-3

Time and result (2026-11-25, commit 5965313 / 52d8d74, 2-core CPU shared with other jobs at a
load average of 15-45; docs/learners_recurrent.md): CartPole-NoVel-v1 (CartPole-v1 with the cart
and pole velocities hidden), 8 seeds x 500k steps: 37 s compile + 381 s run, final return IQM
495.7 [475.3, 500.0] (feed-forward PPO: 49.6); MemoryChain-bsuite (a cue shown at the first
step, to be recalled 5 steps later), 8 seeds x 100k steps: 49 s + 151 s, final return 1.0 on
every seed (feed-forward PPO: 0.0, chance). The other tasks run with the defaults, untuned.
"""

import ml_collections

from rljax import cli

# Per-environment overrides of the defaults in get_config. Budgets are env steps per learner.
ENV_OVERRIDES = {
    "CartPole-NoVel-v1": {},
    # Episodes of memory_length + 1 = 6 steps, reward +-1 at the last; chance level is 0.
    "MemoryChain-bsuite": {"total_timesteps": 100_352},
    # Find the goal, then find it again from a new start within the same 200-step episode.
    "MetaMaze-misc": {"total_timesteps": 999_424, "ppo_rnn.num_steps": 128},
    # Two Bernoulli arms, 100 pulls; the better arm must be found within the episode.
    "BernoulliBandit-misc": {"total_timesteps": 999_424, "ppo_rnn.num_steps": 128},
    # The other hidden-velocity tasks run with the defaults; not tuned.
    "Acrobot-NoVel-v1": {},
    "MountainCar-NoVel-v0": {},
    "Pendulum-NoVel-v1": {"ppo_rnn.normalize_obs": True, "hparams.gamma": 0.95},
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    """Returns the recurrent PPO config for the environment named by ``arg``."""
    env_name = arg or "CartPole-NoVel-v1"
    if env_name not in ENV_OVERRIDES:
        raise ValueError(
            f"configs/ppo_rnn.py:{env_name} is unknown; valid: {', '.join(ENV_OVERRIDES)}"
        )
    c = ml_collections.ConfigDict()
    c.learner = "ppo_rnn"  # which learner module runs (see experiments/train.py LEARNERS)
    c.env_name = env_name  # gymnax environment (rljax.envs.SUPPORTED_ENVS)
    c.seed = 0  # seed s of each grid point starts from learner_key(seed, s) (rljax.agents.learner)
    c.num_seeds = 8  # seeds per grid point, trained together under one vmap
    c.total_timesteps = 499_712  # env steps per learner (488 updates of 1024)
    c.chunk_updates = 0  # updates per compiled call between host syncs (0 = total/16)
    c.checkpoint_every = 4  # chunks between periodic checkpoints
    c.resume = False  # continue from the latest checkpoint in --workdir
    c.progress = True  # show a progress bar
    c.mesh = ml_collections.ConfigDict()  # device mesh and sharding (rljax.parallel)
    c.mesh.shape = ()  # devices per axis, e.g. (4, 2); () = --cpu_devices' ("seeds",) layout
    c.mesh.axes = ()  # axis names, e.g. ("seeds", "data")
    c.mesh.rules = "seeds"  # seeds | seeds_and_envs | seeds_envs_and_replay (experiments/train.py)

    c.ppo_rnn = ml_collections.ConfigDict()  # static settings: rljax.agents.ppo_rnn.Config
    c.ppo_rnn.num_envs = 32  # parallel environments per learner = sequences per rollout
    c.ppo_rnn.num_steps = 32  # rollout length = BPTT truncation length
    c.ppo_rnn.num_epochs = 4  # passes over each rollout
    c.ppo_rnn.num_minibatches = 4  # minibatches of whole sequences; must divide num_envs
    c.ppo_rnn.embed_size = 64  # observation embedding width
    c.ppo_rnn.core_size = 64  # GRU state size
    c.ppo_rnn.hidden = (64,)  # actor and critic head MLP widths
    c.ppo_rnn.activation = "tanh"  # tanh | relu | gelu | swish
    c.ppo_rnn.max_grad_norm = 0.5  # global gradient-norm clip
    c.ppo_rnn.anneal_lr = True  # linear learning-rate decay to 0
    c.ppo_rnn.normalize_obs = False  # running observation normalization
    c.ppo_rnn.normalize_adv = True  # per-minibatch advantage standardization
    c.ppo_rnn.clip_value = True  # clipped value loss

    c.hparams = ml_collections.ConfigDict()  # array leaves: can be swept in one program
    c.hparams.lr = 1e-3  # Adam step size
    c.hparams.clip_eps = 0.2  # PPO clip range
    c.hparams.ent_coef = 0.01  # entropy bonus
    c.hparams.vf_coef = 0.5  # value loss weight
    c.hparams.gamma = 0.99  # discount
    c.hparams.gae_lambda = 0.95  # GAE lambda

    # Comma-separated values train as a grid together with the seeds, e.g. lr="1e-4,3e-4".
    c.sweep = ml_collections.ConfigDict({k: "" for k in c.hparams})

    return cli.apply_overrides(c, ENV_OVERRIDES[env_name])
