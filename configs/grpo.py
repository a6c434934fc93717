"""Small-LM RLVR: SFT base (cached), then a population of GRPO-family learners, then pass@k.

    python experiments/train_lm.py --config=configs/grpo.py:arithmetic
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic --config.preset=dapo
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic --config.num_seeds=4 \
        --config.sweep.preset=grpo,dr_grpo,dapo,lite_ppo        # 16 learners, one program
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic,fast   # the testbed
    python experiments/train_lm.py --config=configs/grpo.py:arithmetic,tiny   # CI / notebook

The argument is `<task>[,fast|,tiny]`, task in {arithmetic, countdown, strings, equation}.
Presets (rljax/agents/grpo/presets.py): grpo, dr_grpo, dapo, lite_ppo, ngrpo, gspo, rloo, cispo,
nft, pacs, rover, sapo, vespo, luspo, dph_fkl, dph_js. `rl.*` fields left at None take the
preset's value (`rl.delta=4` TRL's two-sided clip, `rl.mask_truncated_completions=1`);
`sweep.<field>=a,b` sweeps a preset field (numbers or choice names) or the preset itself;
every combination x `num_seeds` trains together.

Measured on the 2-core CPU (docs/lm.md):
  arithmetic        1 learner, 200 steps: held-out pass@1 0.362 -> 0.558; RL 1031 s at load
                    5-15 (not re-timed idle); SFT 183 s idle, cached afterwards.
  arithmetic,fast   the testbed: 5 learners x 100 steps in 133 s (27 s each) + 15 s compile,
                    GRPO gain +12.1 [+10.6, +13.3] (seeds 100-104) / +21.2 [+20.0, +22.3]
                    (seeds 0-4) points of held-out pass@1; SFT 51-99 s, cached.
"""

import ml_collections

from rljax.train import rl_fields


def get_config(arg: str = "arithmetic"):
    task, *flags = arg.split(",")
    unknown = sorted(set(flags) - {"fast", "tiny"})
    if unknown:
        raise ValueError(f"config flag {unknown[0]!r} is unknown; valid: fast, tiny")
    tiny, fast = "tiny" in flags, "fast" in flags
    c = ml_collections.ConfigDict()
    c.task = task  # arithmetic | countdown | strings | equation
    c.max_level = 2 if fast else 0  # SFT, RL and test on levels <= this (0 = all)
    c.min_level = 1  # RL and test only on levels >= this (a hard split; the SFT base sees all)
    c.train_problems = 0  # RL draws from the first n training problems (0 = all; 1 = 1-shot)
    c.train_examples = ()  # or only these training problems (indices; 1-shot RLVR's examples)
    c.log_problems = 0  # metrics: training accuracy of problems 0..n-1 per update (their ranking)
    c.least_likely = 0.0  # RL only on this fraction of problems the base finds least likely (SELF)
    c.preset = "grpo"  # the preset of every learner unless swept
    c.seed = 0  # seed s of each grid point starts from learner_key(seed, s) (rljax.agents.learner)
    c.num_seeds = 1  # learners per grid point
    # vmap: a device's learners at once (the base's products stacked over them); sequential: one
    # after another, one learner's activations alive per device (memory; same numbers, slower)
    c.learner_map = "vmap"
    c.resume = False  # continue the run in --workdir (its config must match)
    c.progress = True  # progress bar
    c.data_dir = "runs/lm_data"  # tfds array_record files
    c.base_cache_dir = "runs/lm_base"  # SFT checkpoints keyed by a config hash

    c.model = ml_collections.ConfigDict()
    c.model.d_model = 64 if (tiny or fast) else 128  # residual width
    c.model.n_layers = 1 if tiny else 2 if fast else 4  # transformer blocks
    c.model.n_heads = 4  # attention heads
    c.model.d_ff = 128 if tiny else 256 if fast else 512  # MLP width
    c.model.family = "tiny"  # tiny | llama | qwen2 | qwen3 (rljax.lm.model.decoder)
    c.model.dtype = "float32"  # float32 | bfloat16 (bf16 compute, float32 master weights)
    c.model.remat = False  # gradient checkpointing: recompute each block in the backward pass
    c.model.logits_chunk = 0  # log-probs' head and log-softmax this many tokens at a time (0: off)
    c.model.path = ""  # a Hugging Face folder: its config.json and weights replace the SFT base
    c.model.tokenizer = ""  # a folder with tokenizer.json (BPE) in place of the character one

    c.sft = ml_collections.ConfigDict()
    c.sft.seed = 0  # the base model's seed (learners of every seed share one base)
    c.sft.steps = 20 if tiny else 1200 if fast else 1500  # optimizer steps
    c.sft.batch_size = 64
    c.sft.learning_rate = 3e-3
    c.sft.warmup_steps = 5 if tiny else 20
    c.sft.weight_decay = 0.01
    c.sft.noise = 0.5  # share of traces with one corrupted character (a sloppy base)
    c.sft.direct_frac = 0.0  # share of traces cut to the bare answer (no worked steps)
    c.sft.direct_noise = 0.0  # share of those bare answers that are wrong (bad guesses)
    c.sft.tool_frac = 0.0  # share of traces that are the task's tool demonstrations (agents)

    c.lora = (
        ml_collections.ConfigDict()
    )  # low-rank adapters over a frozen base (rljax.lm.model.lora)
    c.lora.rank = 0  # r; 0 = full-parameter learners (the default)
    c.lora.alpha = 32.0  # the adapters' output is scaled by alpha / rank
    c.lora.targets = "attention,mlp"  # projection names or groups (attention, mlp)

    # rl.<field>: every preset field (None = the preset's value); sweep.<field> = "a,b,..."
    # ("" = not swept), `preset` included (rljax.train.rl_fields, shared with grpo_math.py)
    c.rl, c.sweep = rl_fields.config_blocks()

    c.run = ml_collections.ConfigDict()
    c.run.steps = 4 if tiny else 100 if fast else 200  # RL updates per learner
    c.run.chunk_steps = 2 if tiny else 25 if fast else 20  # updates per call; quick eval after each
    c.run.checkpoint_every = 1  # chunks between checkpoints
    c.run.prompts_per_step = 8 if tiny else 16 if fast else 32  # B
    c.run.group_size = 4 if tiny else 8  # G
    c.run.oversample = 2  # groups drawn per kept group, when a learner samples dynamically
    c.run.reference_samples = 2  # base samples per prompt, when a learner uses forward KL / JS
    c.run.temperature = 1.0
    c.run.top_p = 1.0
    c.run.format_weight = 0.0
    c.run.eval_problems = 32 if tiny else 128  # quick held-out pass@1 after every chunk

    c.env = ml_collections.ConfigDict()  # a text environment (configs/agent.py); "" = none
    c.env.name = ""  # a key of rljax.train.lm_experiment.ENVS
    c.env.max_turns = 3  # policy turns per episode
    c.env.action_tokens = 16  # tokens per turn
    c.env.observation_tokens = 8  # tokens per observation (the tool's answer)

    c.eval = ml_collections.ConfigDict()  # the final evaluation (host verifiers)
    c.eval.num_samples = 4 if tiny else 16  # n for pass@k, k = 1..n
    c.eval.num_problems = 16 if tiny else 200  # held-out problems (all levels)
    return c
