"""Throughput of the small-LM stack: KV-cache sampling and end-to-end RL steps, with MFU.

    python scripts/bench_lm.py [--sizes=1m,20m] [--reference]

For each model size (~1M and ~20M parameters) prints sampled tokens/s (jitted KV-cache sampling),
end-to-end RL tokens/s and steps/s (sample G answers per prompt, verify on the host, one GRPO
update), and the model FLOPs utilization against the machine's nominal peak. With --reference it
also times Hugging Face `generate` (static cache) on a matching GPT-NeoX architecture (RoPE,
pre-norm, GELU MLP, sequential residual) when torch and transformers are installed, and skips it
cleanly otherwise.
"""

from rljax import cli, xla_flags

xla_flags.set_flags()

import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from rljax import machine  # noqa: E402
from rljax.lm import presets, rlvr, tokenizer  # noqa: E402
from rljax.lm.data import completion_length  # noqa: E402
from rljax.lm.model import TransformerConfig, init_params, num_params  # noqa: E402
from rljax.lm.rollout import generate_and_score, sample_jit  # noqa: E402
from rljax.lm.tasks import TASKS, make_split  # noqa: E402
from rljax.lm.tasks.base import safe_verify  # noqa: E402

SIZES = {
    "1m": dict(d_model=160, n_layers=3, n_heads=4, d_ff=640),
    "20m": dict(d_model=512, n_layers=6, n_heads=8, d_ff=2048),
}
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


def bench_size(name: str, repeats: int, peak: float) -> dict:
    task = TASKS["arithmetic"]
    answer_len = completion_length(task)
    cfg = TransformerConfig(max_len=64, **SIZES[name])
    params = init_params(cfg, jax.random.key(0))
    n = num_params(params)
    problems = make_split(task, num_per_level=16, seed=0)[:16]
    group = 8
    prompts = np.asarray([[1] * 9] * (len(problems) * group), np.int32)

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
    rl_cfg, _ = presets.make_rl_config("grpo", completion_length=answer_len)
    state = rlvr.init(rl_cfg, params)
    update = jax.jit(lambda s, b, k: rlvr.update(s, b, k, cfg=rl_cfg, model_cfg=cfg))
    box = {"state": state}

    def rl_step():
        scored = generate_and_score(
            box["state"].params,
            cfg,
            task,
            problems,
            jax.random.key(2),
            group_size=group,
            temperature=1.0,
            top_p=1.0,
        )
        rewards = np.tile(np.array([1.0, 0.0] * (group // 2), np.float32), (len(problems), 1))
        batch = rlvr.RolloutBatch(*scored[:4], rewards, np.ones_like(rewards))
        box["state"], metrics = update(box["state"], batch, jax.random.key(3))
        jax.block_until_ready(metrics)
        return scored

    t_rl = timed(rl_step, repeats)
    scored = rl_step()
    seq = scored.prompt_tokens.shape[1] + answer_len
    rows = scored.prompt_tokens.shape[0]
    # Sampling + old/ref log-probs (2 forward) + epochs x (forward + backward = 3 forward).
    flops_rl = forward_flops(n, cfg, sampled, seq) + forward_flops(n, cfg, rows * seq, seq) * (
        2 + 3 * rl_cfg.num_epochs
    )
    return {
        "size": name,
        "params": n,
        "sample_tok_s": sampled / t_sample,
        "sample_mfu": forward_flops(n, cfg, sampled, seq) / t_sample / peak,
        "rl_tok_s": rows * seq / t_rl,
        "rl_steps_s": 1.0 / t_rl,
        "rl_mfu": flops_rl / t_rl / peak,
    }


def bench_reference(name: str, repeats: int) -> dict | None:
    """HF `generate` with a static cache on a matching GPT-NeoX model (torch, CPU)."""
    try:
        import torch
        import transformers  # noqa: F401  (used by _hf_model)
    except ImportError:
        print(f"[{name}] reference skipped: torch/transformers are not installed")
        return None
    model = _hf_model(name).eval()
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


def _hf_model(name: str):
    """A GPT-NeoX causal LM matching rljax's transformer of size ``name`` (torch, CPU)."""
    import transformers

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


def bench_trl(name: str, steps: int) -> dict | None:
    """TRL's GRPOTrainer (no vLLM, CPU) on the same task, group size and batch as ``bench_size``.

    Returns end-to-end tokens/s (prompt + completion tokens of every sample per second of
    ``trainer.train()``, after one warm-up step) and RL steps/s (one generated batch and its two
    optimization passes, as in rljax), or None without trl installed. ``steps`` must be even.
    """
    if steps % 2:
        raise ValueError(f"--trl_steps={steps} must be even (TRL reuses each batch for 2 steps)")
    try:
        import datasets
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
        )
        # Passed as a saved path: TRL builds its KL reference model from the same path.
        model_dir = os.path.join(out, "model")
        _hf_model(name).save_pretrained(model_dir)
        trainer = trl.GRPOTrainer(
            model=model_dir,
            reward_funcs=reward,
            args=args,
            train_dataset=data,
            processing_class=_hf_char_tokenizer(),
            callbacks=[_Timer()],
        )
        trainer.train()
    # TRL generates once every `num_iterations` optimizer steps and reuses the batch for the
    # others; one rljax RL step (generate, then 2 epochs) is therefore 2 TRL steps.
    seconds = (timings[-1] - timings[0]) / steps * args.num_iterations  # after the warm-up step
    seq = 1 + task.max_prompt_chars + answer_len
    return {"trl_rl_tok_s": num_prompts * group * seq / seconds, "trl_rl_steps_s": 1 / seconds}


def main():
    cli.quiet_logs()
    parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1m,20m")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reference", action="store_true", help="also time HF generate and TRL")
    parser.add_argument("--trl_steps", type=int, default=4, help="timed TRL steps (even)")
    args = parser.parse_args()
    for name in args.sizes.split(","):
        cli.check_choice("--sizes entry", name, SIZES)
    cli.check_int("--repeats", args.repeats, low=1)
    cli.check_int("--trl_steps", args.trl_steps, low=2)
    if args.trl_steps % 2:
        raise cli.ConfigError(f"--trl_steps={args.trl_steps} is odd; allowed: an even integer")
    peak, peak_note = peak_flops()
    print(f"device: {jax.devices()[0].device_kind} | peak for MFU: {peak_note}")
    print("| size | params | sampled tok/s | sample MFU | RL tok/s | RL steps/s | RL MFU |")
    print("|---|---|---|---|---|---|---|")
    for name in args.sizes.split(","):
        r = bench_size(name, args.repeats, peak)
        print(
            f"| {r['size']} | {r['params']:,} | {r['sample_tok_s']:,.0f} | "
            f"{r['sample_mfu']:.2%} | {r['rl_tok_s']:,.0f} | {r['rl_steps_s']:.2f} | "
            f"{r['rl_mfu']:.2%} |",
            flush=True,
        )
        if args.reference:
            ref = bench_reference(name, args.repeats)
            if ref:
                print(
                    f"[{name}] HF generate (static cache) tok/s: {ref['hf_sample_tok_s']:,.0f} "
                    f"-> rljax/HF = {r['sample_tok_s'] / ref['hf_sample_tok_s']:.2f}x",
                    flush=True,
                )
            trl_ref = bench_trl(name, args.trl_steps)
            if trl_ref:
                print(
                    f"[{name}] TRL GRPOTrainer RL tok/s: {trl_ref['trl_rl_tok_s']:,.0f}, "
                    f"steps/s {trl_ref['trl_rl_steps_s']:.3f} -> rljax/TRL = "
                    f"{r['rl_tok_s'] / trl_ref['trl_rl_tok_s']:.2f}x",
                    flush=True,
                )


if __name__ == "__main__":
    cli.main(main)
