"""Small-LM RLVR: SFT base (cached), then a GRPO-family preset, then pass@k evaluation.

    python experiments/train_lm.py --config=configs/grpo.py:arithmetic
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic --config.preset=dapo
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic,tiny   # CI / notebook

The argument is `<task>[,tiny]`, task in {arithmetic, countdown, strings, equation}; presets are
grpo, dr_grpo, dapo, lite_ppo, ngrpo, gspo, rloo (rljax/lm/presets.py). `rl.*` fields left at
None take the preset's value. Default arithmetic (levels 1-3, 0.8M params, a base trained on
traces of which half carry one wrong character) on the 2-core CPU: SFT 183 s (cached afterwards),
GRPO 200 steps 281 s, held-out pass@1 0.351 -> 0.558 (docs/lm.md).
"""

import ml_collections
from ml_collections import config_dict


def get_config(arg: str = "arithmetic"):
    task, *flags = arg.split(",")
    tiny = "tiny" in flags
    c = ml_collections.ConfigDict()
    c.task = task  # arithmetic | countdown | strings | equation
    c.max_level = 0  # train/test on levels <= this (0 = all)
    c.preset = "grpo"  # grpo | dr_grpo | dapo | lite_ppo | ngrpo | gspo | rloo
    c.seed = 0
    c.data_dir = "runs/lm_data"  # tfds array_record files
    c.base_cache_dir = "runs/lm_base"  # SFT checkpoints keyed by a config hash

    c.model = ml_collections.ConfigDict()
    c.model.d_model = 64 if tiny else 128  # residual width
    c.model.n_layers = 1 if tiny else 4  # transformer blocks
    c.model.n_heads = 4  # attention heads
    c.model.d_ff = 128 if tiny else 512  # MLP width

    c.sft = ml_collections.ConfigDict()
    c.sft.steps = 20 if tiny else 1500  # optimizer steps
    c.sft.batch_size = 64
    c.sft.learning_rate = 3e-3
    c.sft.warmup_steps = 5 if tiny else 20
    c.sft.weight_decay = 0.01
    c.sft.noise = 0.5  # share of traces with one corrupted character (a sloppy base)
    c.sft.direct_frac = 0.0  # share of traces cut to the bare answer (no worked steps)
    c.sft.direct_noise = 0.0  # share of those bare answers that are wrong (bad guesses)

    c.rl = ml_collections.ConfigDict()  # None = the preset's value
    c.rl.learning_rate = config_dict.placeholder(float)
    c.rl.kl = config_dict.placeholder(str)  # none | k1 | k2 | k3
    c.rl.kl_coef = config_dict.placeholder(float)
    c.rl.kl_in_reward = config_dict.placeholder(bool)
    c.rl.entropy_coef = config_dict.placeholder(float)
    c.rl.eps_low = config_dict.placeholder(float)
    c.rl.eps_high = config_dict.placeholder(float)
    c.rl.num_epochs = config_dict.placeholder(int)
    c.rl.num_minibatches = config_dict.placeholder(int)
    c.rl.advantage = config_dict.placeholder(str)
    c.rl.aggregation = config_dict.placeholder(str)
    c.rl.dynamic_sampling = config_dict.placeholder(bool)

    c.run = ml_collections.ConfigDict()
    c.run.steps = 3 if tiny else 200  # RL updates
    c.run.prompts_per_step = 8 if tiny else 32  # B
    c.run.group_size = 4 if tiny else 8  # G
    c.run.oversample = 2  # dynamic sampling over-generation factor
    c.run.temperature = 1.0
    c.run.top_p = 1.0
    c.run.format_weight = 0.0
    c.run.eval_every = 2 if tiny else 20
    c.run.eval_problems = 32 if tiny else 128
    c.run.checkpoint_every = 2 if tiny else 25

    c.eval = ml_collections.ConfigDict()
    c.eval.num_samples = 4 if tiny else 16  # n for pass@k, k = 1..n
    c.eval.num_problems = 16 if tiny else 200  # held-out problems (all levels)
    c.eval.temperature = 1.0
    return c
