"""Throughput of the small-LM stack: KV-cache sampling, RL steps and whole LM populations, MFU.

    python scripts/bench_lm.py [--sizes=1m,20m] [--reference]
    python scripts/bench_lm.py --sizes=1m --family=qwen2 --reference  # a Qwen-layout model
    python scripts/bench_lm.py --population=1,4,8,16     # population tokens/s and MFU
    python scripts/bench_lm.py --vs_sequential=8         # 8 learners: one program vs 8 processes
    python scripts/bench_lm.py --breakdown=1,8           # where a step's time goes, per learner
    python scripts/bench_lm.py --lora=8                  # LoRA population vs solo vs full
    python scripts/bench_lm.py --lora_maps=8             # 8 LoRA learners: vmap vs sequential
    python scripts/bench_lm.py --lora_memory             # LoRA learners at the Qwen2.5-1.5B shape
    python scripts/bench_lm.py --lora_memory --remat     # ... also with remat and logits chunks
    python scripts/bench_lm.py --lora_memory --sequential  # ... also one learner at a time

For each model size (~1M and ~20M parameters) prints sampled tokens/s (jitted KV-cache sampling),
end-to-end RL tokens/s and steps/s (one learner's whole step under one jit: sample G answers per
prompt, reward on device, GRPO epochs), and the model FLOPs utilization against the machine's
nominal peak. `--population` times the default arithmetic learner vmapped over populations of
the given sizes; `--vs_sequential` times whole `experiments/train_lm.py` runs. With
--reference it also times Hugging Face `generate` (static cache) on the matching transformers
model (for the tiny family a GPT-NeoX of the same shape; for `--family=qwen2` or `llama` the
same weights, exported and loaded by transformers) and TRL's GRPOTrainer when torch,
transformers and trl are installed, and skips them cleanly otherwise. The reference is pinned to
what rljax computes: float32 weights and arithmetic (TRL's default on a CPU without native
bfloat16 is emulated bfloat16) and no recomputation (TRL's default is gradient checkpointing),
with the same number of CPU threads; both sides' settings are printed before the ratio.
"""

from rljax import cli, prng_kernel, xla_flags

xla_flags.set_flags()
prng_kernel.install()  # CPU random draws through the compiled Threefry kernel (same numbers)

import functools  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from rljax import machine  # noqa: E402
from rljax.agents import grpo  # noqa: E402
from rljax.agents.grpo import groups, objective, presets  # noqa: E402
from rljax.lm.model import tokenizer  # noqa: E402
from rljax.lm.model.decoder import TransformerConfig, init_params, num_params  # noqa: E402
from rljax.lm.model.logprobs import completion_log_probs  # noqa: E402
from rljax.lm.tasks import TASKS, device_reward, make_split  # noqa: E402
from rljax.lm.tasks.base import safe_verify  # noqa: E402
from rljax.lm.tasks.batches import completion_length, prompt_length  # noqa: E402
from rljax.lm.tasks.rollout import sample_jit  # noqa: E402

SIZES = {
    "1m": dict(d_model=160, n_layers=3, n_heads=4, d_ff=640),
    "20m": dict(d_model=512, n_layers=6, n_heads=8, d_ff=2048),
}
# --family: the tiny model (its reference a GPT-NeoX model of the same shape), or a family with a
# Hugging Face layout, whose reference is the very same weights loaded by transformers. Qwen2 and
# Llama use grouped-query attention with half as many key/value heads; Qwen ties the embeddings.
FAMILIES = {
    "tiny": {},
    "qwen2": dict(family="qwen2", kv_ratio=2, tie_embeddings=True),
    "llama": dict(family="llama", kv_ratio=2, tie_embeddings=False),
}


def model_config(name: str, family: str = "tiny") -> TransformerConfig:
    """The benchmark's model of size ``name`` in ``family`` (max_len 64: prompt + answer)."""
    extra = dict(FAMILIES[family])
    kv_ratio = extra.pop("kv_ratio", 1)
    size = SIZES[name]
    if kv_ratio > 1:
        extra["n_kv_heads"] = size["n_heads"] // kv_ratio
    return TransformerConfig(max_len=64, **size, **extra)


# Nominal dense fp32 peaks per device for MFU (FLOP/s). CPU: cores x GHz x 32 (AVX2, 2 FMA units).
GPU_PEAKS = {"H200": 67e12, "H100": 67e12, "A100": 19.5e12}


def peak_flops() -> tuple[float, str]:
    device = jax.devices()[0]
    if device.platform == "gpu":
        for name, peak in GPU_PEAKS.items():
            if name in device.device_kind:
                return peak, f"{device.device_kind} fp32 {peak / 1e12:.1f} TFLOP/s"
        return float("nan"), device.device_kind
    cores = os.cpu_count() or 1
    mhz, avx512 = machine.cpu_mhz_and_avx512()
    flops_per_cycle = 64 if avx512 else 32
    peak = cores * mhz * 1e6 * flops_per_cycle
    return peak, f"{cores} cores x {mhz / 1e3:.2f} GHz x {flops_per_cycle} FLOP/cycle"


def forward_flops(n_params: int, cfg: TransformerConfig, tokens: int, context: int) -> float:
    """~2 N per token plus attention (2 x 2 x d x context per token per layer)."""
    return tokens * (2 * n_params + 4 * cfg.n_layers * cfg.d_model * context)


def timed(fn, repeats: int) -> float:
    fn()  # compile / warm up
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def _learner(model_cfg: TransformerConfig, prompts: int, group: int, preset: str = "grpo"):
    """A learner config, task data (random base, arithmetic) and one learner's hparams."""
    task = TASKS["arithmetic"]
    problems = make_split(task, num_per_level=64, seed=0)
    table = jax.tree.map(jax.numpy.asarray, device_reward.make_table(task, problems))
    base = init_params(model_cfg, jax.random.key(0))
    data = grpo.TaskData(base, table, jax.tree.map(lambda x: x[:128], table))
    agent_cfg = grpo.Config(
        model=model_cfg,
        reward_kind=device_reward.KINDS[task.name],
        completion_length=completion_length(task),
        prompts_per_step=prompts,
        group_size=group,
    )
    hp = grpo.make_hparams(presets.hparam_values(presets.resolve(preset)))
    return agent_cfg, data, hp


def _default_learner():
    """The default arithmetic learner of configs/grpo.py (0.8M parameters, 32 prompts x 8)."""
    task = TASKS["arithmetic"]
    model_cfg = TransformerConfig(
        d_model=128,
        n_layers=4,
        n_heads=4,
        d_ff=512,
        max_len=prompt_length(task) + completion_length(task),
    )
    return _learner(model_cfg, prompts=32, group=8)


def _step_flops(agent_cfg: grpo.Config, n_params: int, learners: int) -> tuple[float, int]:
    """FLOPs of one RL step and its tokens: sampling, old + reference log-probs (2 forward
    passes), and num_epochs passes of forward + backward (3 forward each)."""
    rows = agent_cfg.prompts_per_step * agent_cfg.group_size
    seq = prompt_length(TASKS["arithmetic"]) + agent_cfg.completion_length
    sampled = rows * agent_cfg.completion_length
    flops = forward_flops(n_params, agent_cfg.model, sampled, seq) + forward_flops(
        n_params, agent_cfg.model, rows * seq, seq
    ) * (2 + 3 * agent_cfg.max_epochs)
    return learners * flops, learners * rows * seq


def bench_size(name: str, repeats: int, peak: float, family: str = "tiny") -> dict:
    """Sampling alone, and one learner's whole RL step under one jit, for model size `name`."""
    answer_len = completion_length(TASKS["arithmetic"])
    cfg = model_config(name, family)
    agent_cfg, data, hp = _learner(cfg, prompts=16, group=8)
    params = data.base_params
    n = num_params(params)
    prompts = np.asarray([[1] * 9] * 128, np.int32)

    def sample_once():
        out = sample_jit(
            params,
            cfg,
            prompts,
            np.ones_like(prompts),
            jax.random.key(1),
            max_new_tokens=answer_len,
            temperature=1.0,
            top_p=1.0,
        )
        jax.block_until_ready(out)

    t_sample = timed(sample_once, repeats)
    sampled = prompts.shape[0] * answer_len
    update = jax.jit(lambda s, d: grpo.update(agent_cfg, d, s), donate_argnums=0)
    box = {"state": grpo.init(agent_cfg, data, jax.random.PRNGKey(0), hp)}

    def rl_step():
        box["state"], metrics = update(box["state"], data)
        jax.block_until_ready(metrics)

    t_rl = timed(rl_step, repeats)
    flops, tokens = _step_flops(agent_cfg, n, 1)
    return {
        "size": name,
        "params": n,
        "sample_tok_s": sampled / t_sample,
        "sample_mfu": forward_flops(n, cfg, sampled, prompts.shape[1] + answer_len)
        / t_sample
        / peak,
        "rl_step_s": t_rl,
        "rl_tok_s": tokens / t_rl,
        "rl_steps_s": 1.0 / t_rl,
        "rl_mfu": flops / t_rl / peak,
        "params_tree": params,
        "model_cfg": cfg,
    }


def bench_population(sizes: list[int], steps: int, peak: float) -> None:
    """The default arithmetic learner (configs/grpo.py) as populations of `sizes` learners."""
    agent_cfg, data, hp = _default_learner()
    n = num_params(data.base_params)
    print(f"population of default learners ({n:,} params, 32 prompts x 8 samples, GRPO)")
    print("| learners | compile s | s / step | s / step / learner | tokens/s | MFU |")
    print("|---|---|---|---|---|---|")
    chunk = jax.jit(
        jax.vmap(lambda s, d: grpo.train_chunk(agent_cfg, d, s, steps), in_axes=(0, None)),
        donate_argnums=0,
    )
    for size in sizes:
        keys = jax.vmap(jax.random.PRNGKey)(np.arange(size))
        hps = jax.tree.map(lambda x, size=size: jax.numpy.stack([x] * size), hp)
        states = jax.vmap(lambda k, h: grpo.init(agent_cfg, data, k, h))(keys, hps)
        t0 = time.perf_counter()
        compiled = chunk.lower(states, data).compile()
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        states, metrics = compiled(states, data)
        jax.block_until_ready(metrics)
        per_step = (time.perf_counter() - t0) / steps
        flops, tokens = _step_flops(agent_cfg, n, size)
        print(
            f"| {size} | {compile_s:.1f} | {per_step:.2f} | {per_step / size:.2f} | "
            f"{tokens / per_step:,.0f} | {flops / per_step / peak:.2%} |",
            flush=True,
        )


def bench_breakdown(sizes: list[int], repeats: int) -> None:
    """The default learner's step split into its parts, each jitted alone and vmapped over
    populations of `sizes` learners: KV-cache sampling of the 32 x 8 completions, one log-prob
    pass over them (the step does two: old and reference), one micro-batch's loss and gradient
    (the step does epochs x minibatches of them), and the whole step."""
    cfg, data, hp = _default_learner()
    rows = jax.numpy.repeat(jax.numpy.arange(cfg.prompts_per_step), cfg.group_size)
    prompt = (data.train.prompt_tokens[rows], data.train.prompt_mask[rows])
    micro = rows.shape[0] // cfg.max_minibatches

    def sample_part(state, key):
        return grpo.act(cfg, data, state, prompt, key)

    def logprob_part(state, out):  # as the step runs it: each prompt once per group
        return completion_log_probs(
            state.params, cfg.model, *prompt, out.tokens, out.mask, cfg.group_size
        )

    def grad_part(state, out):
        a = out.tokens.shape[1]
        batch = groups.Batch(
            prompt_tokens=prompt[0][:micro],
            prompt_mask=prompt[1][:micro],
            tokens=out.tokens[:micro],
            completion_mask=out.mask[:micro],
            mask=out.mask[:micro].astype(np.float32),
            old_logp=jax.numpy.zeros((micro, a)),
            old_mean_log_probs=jax.numpy.zeros((micro, a)),
            ref_logp=jax.numpy.zeros((micro, a)),
            adv=jax.numpy.ones(micro),
            correct=jax.numpy.ones(micro),
            correct_rate=jax.numpy.full(micro, 0.5),
        )
        norms = objective.minibatch_norms(batch.mask, 0)
        return jax.grad(lambda p: grpo.loss_fn(p, cfg, state.hparams, batch, None, norms)[0])(
            state.params
        )

    print(
        f"step breakdown of the default learner ({num_params(data.base_params):,} params, "
        f"{cfg.prompts_per_step} prompts x {cfg.group_size}, {cfg.max_epochs} epochs x "
        f"{cfg.max_minibatches} minibatches): ms per learner"
    )
    print("| learners | sampling | one log-prob pass | one micro-batch loss+grad | whole step |")
    print("|---|---|---|---|---|")
    for size in sizes:
        keys = jax.vmap(jax.random.PRNGKey)(np.arange(size))
        hps = jax.tree.map(lambda x, size=size: jax.numpy.stack([x] * size), hp)
        states = jax.vmap(lambda k, h: grpo.init(cfg, data, k, h))(keys, hps)
        sample_fn = jax.jit(jax.vmap(sample_part))
        out = sample_fn(states, keys)
        calls = [
            (sample_fn, (states, keys)),
            (jax.jit(jax.vmap(logprob_part)), (states, out)),
            (jax.jit(jax.vmap(grad_part)), (states, out)),
            (jax.jit(jax.vmap(functools.partial(grpo.update, cfg, data))), (states,)),
        ]
        ms = [1e3 * timed_call(fn, args, repeats) / size for fn, args in calls]
        print(f"| {size} | " + " | ".join(f"{t:.0f}" for t in ms) + " |", flush=True)


def timed_call(fn, args: tuple, repeats: int) -> float:
    """Seconds per call of `fn(*args)` (first call: compile and warm-up, not timed)."""
    return timed(lambda: jax.block_until_ready(fn(*args)), repeats)


def bench_vs_sequential(learners: int, steps: int) -> None:
    """Whole processes: one population of `learners` vs that many single-learner processes."""
    import subprocess
    import sys
    import tempfile

    common = [
        sys.executable,
        "experiments/train_lm.py",
        "--config=configs/grpo.py:arithmetic",
        f"--config.run.steps={steps}",
        f"--config.run.chunk_steps={steps}",
        "--config.eval.num_problems=16",
        "--config.eval.num_samples=4",
        "--config.progress=False",
    ]
    with tempfile.TemporaryDirectory() as out:

        def timed_run(args):
            t0 = time.perf_counter()
            subprocess.run(common + args, check=True, capture_output=True)
            return time.perf_counter() - t0

        # Build and cache the base first; not timed.
        timed_run([f"--workdir={out}/warm", "--config.run.steps=1", "--config.run.chunk_steps=1"])
        sequential = sum(
            timed_run([f"--workdir={out}/single{s}", f"--config.seed={s}"]) for s in range(learners)
        )
        # The population on two CPU devices per core (`--cpu_devices`), the fastest LM layout
        # measured on the 2-core CPU (docs/lm.md): a device's learners are vmapped, and their
        # weight-gradient products leave XLA:CPU's fast path once batched, so fewer learners per
        # device pay less (8 learners: 1.01 s per learner-step on 2 devices, 0.93 s on 4).
        devices, _ = xla_flags.cpu_layout(learners, cores=2 * xla_flags.available_cores())
        population = timed_run(
            [f"--workdir={out}/pop", f"--config.num_seeds={learners}", f"--cpu_devices={devices}"]
        )
    print(
        f"{learners} learners x {steps} RL steps (default arithmetic learner, whole processes, "
        f"compile included): {learners} sequential processes {sequential:.1f} s, one "
        f"population ({devices} CPU devices) {population:.1f} s -> population is "
        f"{sequential / population:.2f}x faster"
    )


def bench_reference(name: str, repeats: int, threads: int, ours: dict) -> dict | None:
    """HF `generate` with a static cache on the matching transformers model (``_hf_model``;
    torch, CPU, float32, ``threads`` torch threads)."""
    try:
        import torch
        import transformers  # noqa: F401  (used by _hf_model)
    except ImportError:
        print(f"[{name}] reference skipped: torch/transformers are not installed")
        return None
    torch.set_num_threads(threads)
    model = _hf_model(name, ours).eval()
    prompts = torch.ones((128, 9), dtype=torch.long)
    answer_len = completion_length(TASKS["arithmetic"])

    def generate():
        with torch.no_grad():
            model.generate(
                prompts,
                max_new_tokens=answer_len,
                min_new_tokens=answer_len,
                do_sample=True,
                cache_implementation="static",
                pad_token_id=0,
            )

    t = timed(generate, repeats)
    return {"size": name, "hf_sample_tok_s": prompts.shape[0] * answer_len / t}


def _hf_model(name: str, ours: dict):
    """The transformers model to compare with (torch, CPU, float32): for a family with a Hugging
    Face layout, rljax's own weights written by `rljax.lm.model.hf.checkpoint.save` and loaded back
    by
    transformers; for the tiny family a GPT-NeoX causal LM of the same shape (RoPE, pre-norm,
    GELU MLP, sequential residual), randomly initialized."""
    import tempfile

    import transformers

    cfg = ours["model_cfg"]
    if cfg.family != "tiny":
        from rljax.lm.model.hf import checkpoint

        with tempfile.TemporaryDirectory() as folder:
            checkpoint.save(folder, ours["params_tree"], cfg)
            return transformers.AutoModelForCausalLM.from_pretrained(folder, dtype="float32")
    s = SIZES[name]
    config = transformers.GPTNeoXConfig(
        vocab_size=tokenizer.VOCAB_SIZE,
        hidden_size=s["d_model"],
        num_hidden_layers=s["n_layers"],
        num_attention_heads=s["n_heads"],
        intermediate_size=s["d_ff"],
        rotary_pct=1.0,
        use_parallel_residual=False,
        max_position_embeddings=64,
        hidden_act="gelu",
        bos_token_id=tokenizer.BOS,
        eos_token_id=tokenizer.EOS,
        pad_token_id=tokenizer.PAD,
    )
    return transformers.GPTNeoXForCausalLM(config)


def _hf_char_tokenizer():
    """rljax's character vocabulary as a Hugging Face fast tokenizer (one token per character)."""
    import tokenizers
    import transformers

    vocab = {"<pad>": tokenizer.PAD, "<bos>": tokenizer.BOS, "<eos>": tokenizer.EOS}
    vocab.update({c: i + 3 for i, c in enumerate(tokenizer.CHARS)})
    core = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<pad>"))
    core.pre_tokenizer = tokenizers.pre_tokenizers.Split("", behavior="isolated")
    core.decoder = tokenizers.decoders.Fuse()  # characters join without spaces
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>"
    )


# What rljax's RL step computes, which the TRL reference is pinned to (bench_trl).
RLJAX_SETTINGS = {"precision": "float32", "gradient_checkpointing": False}


def rljax_settings(params, threads: int) -> dict:
    """rljax's side of the comparison: the parameters' dtype, no recomputation (rljax has no
    ``jax.checkpoint``), and XLA's CPU threads (``PJRT_NPROC``, else one per core)."""
    dtypes = sorted({str(x.dtype) for x in jax.tree.leaves(params)})
    return {"precision": ",".join(dtypes), "gradient_checkpointing": False, "threads": threads}


def trl_settings(trainer, torch) -> dict:
    """TRL's side, read back from the built trainer (not from the arguments passed to it)."""
    model = trainer.model
    dtypes = sorted({str(p.dtype).removeprefix("torch.") for p in model.parameters()})
    mixed = "bfloat16" if trainer.args.bf16 else "float16" if trainer.args.fp16 else None
    return {
        "precision": ",".join(dtypes) + (f" with {mixed} autocast" if mixed else ""),
        "gradient_checkpointing": bool(
            getattr(model, "is_activation_checkpointing", None)  # transformers >= 5.24
            or getattr(model, "is_gradient_checkpointing", False)
        ),
        "threads": torch.get_num_threads(),
    }


def describe_settings(side: str, settings: dict) -> str:
    recompute = "on" if settings["gradient_checkpointing"] else "off"
    return (
        f"{side}: precision {settings['precision']}, gradient checkpointing {recompute}, "
        f"{settings['threads']} CPU threads"
    )


def bench_trl(name: str, steps: int, threads: int, ours: dict) -> dict | None:
    """TRL's GRPOTrainer (no vLLM, CPU) on the same task, group size and batch as ``bench_size``,
    pinned to rljax's settings: float32 (``bf16=False``, ``fp16=False``, float32 weights), no
    gradient checkpointing, ``threads`` torch threads.

    Returns end-to-end tokens/s (prompt + completion tokens of every sample per second of
    ``trainer.train()``, after one warm-up step) and RL steps/s (one generated batch and its two
    optimization passes, as in rljax), or None without trl installed. ``steps`` must be even.
    """
    if steps % 2:
        raise ValueError(f"--trl_steps={steps} must be even (TRL reuses each batch for 2 steps)")
    try:
        import datasets
        import torch
        import trl
    except ImportError:
        print(f"[{name}] TRL reference skipped: trl/datasets are not installed")
        return None
    import tempfile

    task = TASKS["arithmetic"]
    problems = make_split(task, num_per_level=64, seed=0)
    group, num_prompts = 8, 16
    answer_len = completion_length(task)
    data = datasets.Dataset.from_dict({"prompt": ["<bos>" + p.prompt for p in problems]})
    by_prompt = {"<bos>" + p.prompt: p for p in problems}

    def reward(prompts, completions, **_):
        pairs = zip(prompts, completions, strict=True)
        return [float(safe_verify(task, by_prompt[p], c).correct) for p, c in pairs]

    timings = []

    class _Timer(__import__("transformers").TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            timings.append(time.perf_counter())

    with tempfile.TemporaryDirectory() as out:
        args = trl.GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=num_prompts * group,
            num_generations=group,
            max_completion_length=answer_len,
            num_iterations=2,
            beta=0.04,
            learning_rate=3e-4,
            max_steps=steps + 1,
            temperature=1.0,
            use_vllm=False,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            logging_steps=10_000,
            disable_tqdm=True,
            bf16=False,
            fp16=False,
            gradient_checkpointing=RLJAX_SETTINGS["gradient_checkpointing"],
            model_init_kwargs={"dtype": RLJAX_SETTINGS["precision"]},
        )
        torch.set_num_threads(threads)
        # Passed as a saved path: TRL builds its KL reference model from the same path.
        model_dir = os.path.join(out, "model")
        _hf_model(name, ours).save_pretrained(model_dir)
        trainer = trl.GRPOTrainer(
            model=model_dir,
            reward_funcs=reward,
            args=args,
            train_dataset=data,
            processing_class=_hf_char_tokenizer(),
            callbacks=[_Timer()],
        )
        settings = trl_settings(trainer, torch)
        trainer.train()
    # TRL generates once every `num_iterations` optimizer steps and reuses the batch for the
    # others; one rljax RL step (generate, then 2 epochs) is therefore 2 TRL steps.
    seconds = (timings[-1] - timings[0]) / steps * args.num_iterations  # after the warm-up step
    seq = 1 + task.max_prompt_chars + answer_len
    return {
        "trl_rl_tok_s": num_prompts * group * seq / seconds,
        "trl_rl_steps_s": 1 / seconds,
        "settings": settings,
    }


def bench_lora_all(args) -> None:
    """scripts/bench_lora.py: speed on the default learner; memory in a process that has
    8 fake CPU devices (set before jax starts)."""
    import json
    import subprocess
    import sys

    import bench_lora

    cli.check_int("--lora_rank", args.lora_rank, low=1)
    cli.check_int("--lora_steps", args.lora_steps, low=1)
    cli.check_int("--lora_maps", args.lora_maps, low=0)
    if args.lora:
        result = bench_lora.speed(
            _default_learner, args.lora, args.lora_rank, args.lora_steps, args.repeats
        )
        bench_lora.print_speed(result)
    if args.lora_maps:
        result = bench_lora.map_speed(
            _default_learner, args.lora_maps, args.lora_rank, args.lora_steps, args.repeats
        )
        bench_lora.print_map_speed(result)
    if args.lora_memory:
        cli.check_int("--logits_chunk", args.logits_chunk, low=1)
        settings = [(False, 0, "vmap")]
        if args.remat:  # side by side: remat alone, then with the chunked head
            settings += [(True, 0, "vmap"), (True, args.logits_chunk, "vmap")]
        if args.sequential:  # each device's learners one after another
            settings += [(r, c, "sequential") for r, c, _ in settings[: 1 + args.remat]]
        code = (
            "import bench_lora, json; print(json.dumps([bench_lora.memory(remat=r, "
            f"logits_chunk=c, learner_map=m) for r, c, m in {settings!r}]))"
        )
        flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=8"
        env = {**os.environ, "XLA_FLAGS": flags.strip()}  # with set_flags' scheduler flag
        here = os.path.dirname(os.path.abspath(__file__))
        env["PYTHONPATH"] = os.pathsep.join([here, env.get("PYTHONPATH", "")])
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        results = json.loads(done.stdout.strip().splitlines()[-1])
        for result in results:
            bench_lora.print_memory(result)
        if len(results) > 1:
            bench_lora.print_memory_table(results)


def _sizes(flag: str, text: str) -> list[int]:
    """Population sizes from "1,4,8"; a clear error for anything else."""
    try:
        sizes = [int(v) for v in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise cli.ConfigError(
            f"{flag}={text!r} is invalid; allowed: comma-separated integers >= 1, e.g. 1,4,8"
        )
    return sizes


def main():
    cli.quiet_logs()
    parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1m,20m")
    parser.add_argument("--family", default="tiny", help=f"one of {', '.join(FAMILIES)}")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reference", action="store_true", help="also time HF generate and TRL")
    parser.add_argument("--trl_steps", type=int, default=4, help="timed TRL steps (even)")
    parser.add_argument("--population", default="", help="population sizes, e.g. 1,4,8,16")
    parser.add_argument("--population_steps", type=int, default=3, help="timed steps per size")
    parser.add_argument("--vs_sequential", type=int, default=0, help="learners (0: skip)")
    parser.add_argument("--breakdown", default="", help="population sizes, e.g. 1,8")
    parser.add_argument("--sequential_steps", type=int, default=20, help="RL steps per learner")
    parser.add_argument("--lora", type=int, default=0, help="LoRA learners (0: skip)")
    parser.add_argument("--lora_maps", type=int, default=0, help="LoRA learners (0: skip)")
    parser.add_argument("--lora_rank", type=int, default=8, help="their rank")
    parser.add_argument("--lora_steps", type=int, default=5, help="RL steps per LoRA learner")
    parser.add_argument("--lora_memory", action="store_true", help="Qwen2.5-1.5B memory (slow)")
    parser.add_argument("--remat", action="store_true", help="--lora_memory also with remat")
    parser.add_argument("--logits_chunk", type=int, default=32, help="... and this logits_chunk")
    parser.add_argument("--sequential", action="store_true", help="--lora_memory also sequential")
    args = parser.parse_args()
    for name in args.sizes.split(","):
        cli.check_choice("--sizes entry", name, SIZES)
    cli.check_choice("--family", args.family, FAMILIES)
    cli.check_int("--repeats", args.repeats, low=1)
    cli.check_int("--trl_steps", args.trl_steps, low=2)
    if args.trl_steps % 2:
        raise cli.ConfigError(f"--trl_steps={args.trl_steps} is odd; allowed: an even integer")
    population = _sizes("--population", args.population) if args.population else []
    breakdown = _sizes("--breakdown", args.breakdown) if args.breakdown else []
    peak, peak_note = peak_flops()
    print(f"device: {jax.devices()[0].device_kind} | {machine.describe()} | peak: {peak_note}")
    if args.population:
        bench_population(population, args.population_steps, peak)
    if args.vs_sequential:
        bench_vs_sequential(args.vs_sequential, args.sequential_steps)
    if args.breakdown:
        bench_breakdown(breakdown, args.repeats)
    if args.lora or args.lora_memory or args.lora_maps:
        bench_lora_all(args)
    if any((args.population, args.vs_sequential, args.breakdown, args.lora, args.lora_memory,
            args.lora_maps)):  # fmt: skip
        return
    print("| size | params | sampled tok/s | sample MFU | RL step s | RL tok/s | RL MFU |")
    print("|---|---|---|---|---|---|---|")
    for name in args.sizes.split(","):
        r = bench_size(name, args.repeats, peak, args.family)
        print(
            f"| {r['size']} | {r['params']:,} | {r['sample_tok_s']:,.0f} | "
            f"{r['sample_mfu']:.2%} | {r['rl_step_s']:.3f} | {r['rl_tok_s']:,.0f} | "
            f"{r['rl_mfu']:.2%} |",
            flush=True,
        )
        if args.reference:
            threads = int(os.environ.get("PJRT_NPROC", xla_flags.available_cores()))
            ref = bench_reference(name, args.repeats, threads, r)
            if ref:
                print(
                    f"[{name}] HF generate (static cache) tok/s: {ref['hf_sample_tok_s']:,.0f} "
                    f"-> rljax/HF = {r['sample_tok_s'] / ref['hf_sample_tok_s']:.2f}x",
                    flush=True,
                )
            trl_ref = bench_trl(name, args.trl_steps, threads, r)
            if trl_ref:
                ours = rljax_settings(r["params_tree"], threads)
                print(f"[{name}] {describe_settings('rljax', ours)}", flush=True)
                print(f"[{name}] {describe_settings('TRL   ', trl_ref['settings'])}", flush=True)
                matched = (
                    all(ours[k] == trl_ref["settings"][k] for k in ("precision", "threads"))
                    and not trl_ref["settings"]["gradient_checkpointing"]
                )
                if not matched:
                    print(f"[{name}] warning: the reference's settings differ from rljax's")
                print(
                    f"[{name}] TRL GRPOTrainer RL tok/s: {trl_ref['trl_rl_tok_s']:,.0f}, "
                    f"steps/s {trl_ref['trl_rl_steps_s']:.3f} -> rljax/TRL = "
                    f"{r['rl_tok_s'] / trl_ref['trl_rl_tok_s']:.2f}x",
                    flush=True,
                )


if __name__ == "__main__":
    cli.main(main)
