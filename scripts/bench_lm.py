"""Throughput of the small-LM stack: KV-cache sampling and end-to-end RL steps, with MFU.

    python scripts/bench_lm.py [--sizes=1m,20m] [--reference]

For each model size (~1M and ~20M parameters) prints sampled tokens/s (jitted KV-cache sampling),
end-to-end RL tokens/s and steps/s (sample G answers per prompt, verify on the host, one GRPO
update), and the model FLOPs utilization against the machine's nominal peak. With --reference it
also times Hugging Face `generate` (static cache) on a matching GPT-NeoX architecture (RoPE,
pre-norm, GELU MLP, sequential residual) when torch and transformers are installed, and skips it
cleanly otherwise.
"""

from rljax import xla_flags

xla_flags.set_flags()

import argparse  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from rljax.lm import presets, rlvr  # noqa: E402
from rljax.lm.data import completion_length  # noqa: E402
from rljax.lm.model import TransformerConfig, init_params, num_params  # noqa: E402
from rljax.lm.rollout import generate_and_score, sample_jit  # noqa: E402
from rljax.lm.tasks import TASKS, make_split  # noqa: E402

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
    mhz = 0.0
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                mhz = max(mhz, float(line.split(":")[1]))
    flops_per_cycle = 64 if "avx512f" in open("/proc/cpuinfo").read() else 32
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
        import transformers
    except ImportError:
        print(f"[{name}] reference skipped: torch/transformers are not installed")
        return None
    s = SIZES[name]
    config = transformers.GPTNeoXConfig(
        vocab_size=64,
        hidden_size=s["d_model"],
        num_hidden_layers=s["n_layers"],
        num_attention_heads=s["n_heads"],
        intermediate_size=s["d_ff"],
        rotary_pct=1.0,
        use_parallel_residual=False,
        max_position_embeddings=64,
        hidden_act="gelu",
    )
    model = transformers.GPTNeoXForCausalLM(config).eval()
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1m,20m")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reference", action="store_true")
    args = parser.parse_args()
    peak, peak_note = peak_flops()
    print(f"device: {jax.devices()[0].device_kind} | peak for MFU: {peak_note}")
    print("| size | params | sampled tok/s | sample MFU | RL tok/s | RL steps/s | RL MFU |")
    print("|---|---|---|---|---|---|---|")
    for name in args.sizes.split(","):
        if name not in SIZES:
            raise ValueError(f"--sizes entry {name!r} is not one of {sorted(SIZES)}")
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
                    f"-> rljax/HF = {r['sample_tok_s'] / ref['hf_sample_tok_s']:.2f}x"
                )


if __name__ == "__main__":
    main()
