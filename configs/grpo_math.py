"""Math RLVR (GRPO family) on local GSM8K / MATH files: `<dataset>,<model>`.

    python experiments/train_math.py --config=configs/grpo_math.py:gsm8k,tiny \
        --config.data.train_path=data/gsm8k/train.jsonl \
        --config.data.test_path=data/gsm8k/test.jsonl
    python experiments/train_math.py --config=configs/grpo_math.py:gsm8k,tiny \
        --config.sweep.preset=grpo,dr_grpo,dapo --config.num_seeds=2   # 6 learners, one program
    python experiments/train_math.py ... --config.resume=True  # continue a stopped run
    python scripts/memory_plan.py --config=configs/grpo_math.py:gsm8k,qwen2.5-0.5b  # fits?
    python experiments/train_math.py --config=configs/grpo_math.py:gsm8k,tiny --cpu_devices=4 \
        --config.sweep.preset=grpo,dr_grpo --config.num_seeds=2 --config.mesh.shape=2,2 \
        --config.mesh.axes=seeds,fsdp  # 4 learners, 2 per pair of devices, weights split over it

The config has the shape of the toy RLVR config (configs/grpo.py): `preset`, `num_seeds`,
`seed`, `resume`, `progress` at the top, the `rl` and `sweep` blocks (every learner field,
`--config.rl.learning_rate=1e-6`, `--config.sweep.kl_coef=0.01,0.04`, `sweep.preset`), then
`model`, `sft`, `run` (the loop's budget and batch), `eval` (the final pass@k) and `mesh` blocks,
plus what only math has: `data` (the files), `checker` (math-verify) and `distributed`.
A checkpoint model (`model.path` set) trains at presets.PRETRAINED's learning rate 1e-6 and
weight decay 0 unless `rl.*` / `sweep.*` say otherwise (the sources: DeepSeekMath, TRL,
DAPO, Dr. GRPO and verl all use 1e-6; rljax/agents/grpo/presets.py, docs/math.md).

dataset: gsm8k | math (the file layout; `data.fields.*` renames fields for other layouts).
model:   tiny (a decoder built at model.d_model.. sizes, byte tokenizer, plain template: runs on
         a CPU) or one of qwen2.5-0.5b, qwen2.5-1.5b, llama-3.2-1b, qwen2.5-7b, qwen3-8b: the
         checkpoint folder (downloaded by the user, docs/math.md) whose config.json, safetensors,
         tokenizer.json and chat template the run loads, its lengths and batch.
mesh:    mesh.shape x mesh.axes (seeds: learners; fsdp / tensor: each learner's weights by
         `mesh.rules`) over the devices of the job (a fixed shape takes the first devices, -1
         the rest): tiny uses one device, the checkpoints FSDP over all of them. The same fields
         feed scripts/memory_plan.py, which finds the presets' step too large for one 80 GB GPU
         (docs/scaling.md); lower the lengths and batch for one GPU.
distributed: several processes (hosts) of one job, as in rljax.parallel.distributed; the
         RLJAX_COORDINATOR_ADDRESS / RLJAX_NUM_PROCESSES / RLJAX_PROCESS_ID / RLJAX_AUTO_DETECT
         environment variables override these fields (docs/math.md has the commands).
Measured: gsm8k,tiny on a 45-problem sample file, 150 SFT + 3 GRPO steps of 2 presets: 1 min 23 s
wall, 31 s CPU (2-core Intel Xeon, 2026-12-04, docs/math.md).
"""

import ml_collections

from rljax.train import rl_fields

DATASETS = ("gsm8k", "math")
# name -> (checkpoint directory ("": the tiny model), prompt tokens, completion tokens, mesh
# shape, mesh axes, rules)
MODELS = {
    "tiny": ("", 96, 8, (1,), ("seeds",), "fsdp"),
    "qwen2.5-0.5b": ("checkpoints/Qwen2.5-0.5B-Instruct", 256, 1024, (-1,), ("fsdp",), "fsdp"),
    "qwen2.5-1.5b": ("checkpoints/Qwen2.5-1.5B-Instruct", 256, 1024, (-1,), ("fsdp",), "fsdp"),
    "llama-3.2-1b": ("checkpoints/Llama-3.2-1B-Instruct", 256, 1024, (-1,), ("fsdp",), "fsdp"),
    "qwen2.5-7b": ("checkpoints/Qwen2.5-7B-Instruct", 256, 1024, (-1,), ("fsdp",), "fsdp"),
    "qwen3-8b": ("checkpoints/Qwen3-8B", 256, 1024, (-1,), ("fsdp",), "fsdp"),
}  # fmt: skip
# The memory plan (docs/scaling.md): on 8 x 80 GB the 7-8B steps fit with 8 micro-batches
# (41 / 50 GB per device) and FSDP; fsdp x tensor (4 x 2) needed more (287 / 356 GB).
ACCUMULATE = {"qwen2.5-7b": 8, "qwen3-8b": 8}


def get_config(arg: str = "gsm8k,tiny"):
    dataset, _, model = arg.partition(",")
    model = model or "tiny"
    if dataset not in DATASETS:
        raise ValueError(f"dataset {dataset!r} is unknown; valid: {', '.join(DATASETS)}")
    if model not in MODELS:
        raise ValueError(f"model {model!r} is unknown; valid: {', '.join(MODELS)}")
    path, prompt_length, completion_length, mesh_shape, mesh_axes, rules = MODELS[model]
    tiny = model == "tiny"
    c = ml_collections.ConfigDict()
    c.preset = "grpo"  # the preset of every learner unless swept
    c.seed = 0  # seed s of each preset starts from learner_key(seed, s) (rljax.agents.learner)
    c.num_seeds = 1  # learners per preset
    c.resume = False  # continue from the latest checkpoint in the workdir (same config)
    c.progress = True  # progress bar with rate and metrics
    # rl.<field>: every learner field of every preset (rljax.agents.grpo.presets.FIELDS, None =
    # the preset's value; a checkpoint model takes presets.PRETRAINED first: learning_rate 1e-6,
    # weight_decay 0); sweep.<field> = "a,b,...": one grid point per value ("" = not swept),
    # sweep.preset the presets. The same blocks as configs/grpo.py (rljax.train.rl_fields).
    c.rl, c.sweep = rl_fields.config_blocks()

    c.data = ml_collections.ConfigDict()
    c.data.train_path = f"data/{dataset}/train.jsonl"  # JSONL or Parquet, downloaded by the user
    c.data.test_path = f"data/{dataset}/test.jsonl"  # held out; no question in train_path
    c.data.layout = dataset  # gsm8k: question / answer "#### n"; math: problem / solution \boxed{}
    c.data.fields = ml_collections.ConfigDict()  # renames for another layout: question="prompt"
    for name in ("question", "solution", "level", "kind"):
        c.data.fields[name] = ""  # "" = the layout's own field
    c.data.answer_modes = "boxed,hash,last_number"  # how a completion's final answer is read

    c.model = ml_collections.ConfigDict()
    c.model.path = path  # a checkpoint folder (config.json + safetensors); "": the tiny model
    c.model.tokenizer = ""  # "bytes" or a tokenizer.json folder; "": bytes (tiny), model.path
    c.model.chat_template = "plain" if tiny else "model"  # "model": the tokenizer's template
    c.model.d_model, c.model.n_layers, c.model.n_heads, c.model.d_ff = 64, 1, 4, 128  # tiny only
    # Memory (docs/scaling.md's plan): activations' dtype, every block checkpointed in the
    # backward pass, completion log-probs 128 tokens at a time (no [rows, A, vocab] logits).
    c.model.dtype = "float32"  # float32 | bfloat16 (parameters and moments stay float32)
    c.model.remat = not tiny
    c.model.logits_chunk = 0 if tiny else 128

    c.sft = ml_collections.ConfigDict()
    c.sft.steps = 150 if tiny else 0  # the tiny model learns the "#### n" format first
    # the tiny model from scratch; a checkpoint at TRL SFTConfig's default (2e-5)
    c.sft.learning_rate = 3e-3 if tiny else 2e-5

    c.run = ml_collections.ConfigDict()
    c.run.steps = 20 if tiny else 200  # RL updates per learner
    # Updates per compiled call (the largest divisor of steps up to this); quick pass@1 after each.
    c.run.chunk_steps = 5 if tiny else 10
    c.run.checkpoint_every = 1  # chunks between checkpoints (resume: --config.resume=True)
    c.run.prompt_length = prompt_length  # P tokens, template included
    c.run.completion_length = completion_length  # A sampled tokens
    c.run.prompts_per_step = 4 if tiny else 8  # B
    c.run.group_size = 4 if tiny else 8  # G
    c.run.micro_batches = ACCUMULATE.get(model, 1)  # gradient accumulation per minibatch
    c.run.temperature = 1.0
    c.run.format_weight = 0.0  # reward for an extractable answer, on top of 1 for a correct one
    c.run.eval_problems = 4 if tiny else 16  # quick held-out pass@1 after every chunk

    c.eval = ml_collections.ConfigDict()  # the final evaluation
    c.eval.num_problems = 0  # held-out problems for pass@k (0: the whole test file)
    c.eval.num_samples = 4 if tiny else 16  # n for pass@k

    c.checker = ml_collections.ConfigDict()  # math-verify, behind a hard deadline
    c.checker.timeout_s = 2.0  # per answer, enforced by killing the worker
    c.checker.workers = 2

    c.mesh = ml_collections.ConfigDict()
    c.mesh.shape = mesh_shape  # devices per axis (-1: the rest); a fixed shape: the first ones
    c.mesh.axes = mesh_axes  # seeds (learners) | data | fsdp | tensor, one per mesh.shape entry
    c.mesh.rules = rules  # how a learner's weights split: fsdp | fsdp_tensor (parallel.steps)

    c.distributed = ml_collections.ConfigDict()  # processes of a multi-host job (RLJAX_* wins)
    c.distributed.coordinator_address = ""  # "host:port" of process 0; "" = one process
    c.distributed.num_processes = 1
    c.distributed.process_id = 0  # this process, 0..num_processes-1
    c.distributed.auto_detect = False  # True: JAX reads them from SLURM / a TPU pod / Open MPI
    return c
