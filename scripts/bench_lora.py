"""LoRA parts of scripts/bench_lm.py (`--lora=8`, `--lora_memory`, `--lora_maps=8`): populations
over one base.

`speed(k)`: on the default arithmetic learner (0.8M parameters, 32 prompts x 8 samples), one
population of k LoRA learners vs k LoRA learners one after another (each its own compile, as k
processes would), and the LoRA population vs a population of k full-parameter learners per
learner-step, with the step's parts (sampling, one log-prob pass, one micro-batch loss+gradient,
the AdamW update) timed alone and vmapped the same way.

`map_speed(k)`: the same population of k LoRA learners vmapped vs one learner at a time
(`learner_map="sequential"`), per learner-step.

`memory(...)`: at the Qwen2.5-1.5B shape, lowered on abstract shapes (`jax.ShapeDtypeStruct`,
no weights materialized) and compiled on a fake mesh of 8 CPU devices, population axis over the
devices and the base replicated, XLA's memory analysis of one training micro-step (loss and
gradient of a completion's log-probabilities, then the Adam update) for 1 and 2 learners per
device. The increment is one extra learner's bytes; the remainder of 80 GB beside the base and
the fixed cost, divided by it, is how many learners fit on one device. `remat` checkpoints every
block and `logits_chunk` computes the completion's head and log-softmax that many tokens at a
time (rljax.lm.model.decoder.TransformerConfig); `learner_map="sequential"` runs each device's
learners
one after another (rljax.parallel.learner_axis.map_learners) instead of vmapped;
`print_memory_table` sets such runs side by side.
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from rljax.agents import grpo
from rljax.lm.model import lora
from rljax.lm.model.decoder import TransformerConfig, init_params
from rljax.lm.model.logprobs import completion_log_probs
from rljax.parallel import learner_axis

# Qwen2.5-1.5B (config.json of Qwen/Qwen2.5-1.5B): 1.54B parameters, tied embeddings.
QWEN25_15B = dict(
    family="qwen2", vocab_size=151_936, d_model=1536, n_layers=28, n_heads=12, n_kv_heads=2,
    d_ff=8960, tie_embeddings=True, rope_base=1_000_000.0,
)  # fmt: skip
DEVICE_BYTES = 80e9  # one 80 GB accelerator


def _timed(fn, args, repeats):
    jax.block_until_ready(fn(*args))  # compile and warm up
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(fn(*args))
    return (time.perf_counter() - t0) / repeats


def _population(cfg, data, hp, k):
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(k))
    hps = jax.tree.map(lambda x: jnp.stack([x] * k), hp)
    return jax.vmap(lambda key, h: grpo.init(cfg, data, key, h))(keys, hps)


def _parts(cfg, data):
    """The step's parts for one learner (vmapped by the caller over its state)."""
    rows = jnp.repeat(jnp.arange(cfg.prompts_per_step), cfg.group_size)
    prompt = (data.train.prompt_tokens[rows], data.train.prompt_mask[rows])
    micro = rows.shape[0] // cfg.max_minibatches
    policy = functools.partial(grpo.policy, cfg, data)

    def sample(state, key):
        return grpo.act(cfg, data, state, prompt, key)

    def logprob(state, out):
        return completion_log_probs(
            policy(state.params), cfg.model, *prompt, out.tokens, out.mask, cfg.group_size
        )[0]

    def grad(state, out):
        def loss(params):
            logp, _ = completion_log_probs(
                lora.with_base(cfg.lora, data.base_params, params), cfg.model,
                prompt[0][:micro], prompt[1][:micro], out.tokens[:micro], out.mask[:micro],
                cfg.group_size,
            )  # fmt: skip
            return -jnp.mean(logp)

        return jax.grad(loss)(state.params)

    def update(state, grads):
        opt = optax.chain(optax.clip_by_global_norm(1.0), optax.scale_by_adam(b2=0.99))
        updates, new_opt = opt.update(grads, state.opt_state, state.params)
        params = jax.tree.map(lambda p, u: p - 1e-3 * u, state.params, updates)
        return params, new_opt

    return sample, logprob, grad, update


def _breakdown(cfg, data, hp, k, repeats):
    """Seconds per learner of each part and of the whole step, k learners vmapped."""
    states = _population(cfg, data, hp, k)
    keys = jax.vmap(jax.random.PRNGKey)(np.arange(k))
    sample, logprob, grad, update = (jax.jit(jax.vmap(f)) for f in _parts(cfg, data))
    out = sample(states, keys)
    grads = grad(states, out)
    step = jax.jit(jax.vmap(functools.partial(grpo.update, cfg, data)))
    times = {
        "sampling": _timed(sample, (states, keys), repeats),
        "log-prob pass": _timed(logprob, (states, out), repeats),
        "micro-batch grad": _timed(grad, (states, out), repeats),
        "update": _timed(update, (states, grads), repeats),
        "whole step": _timed(step, (states,), repeats),
    }
    return {name: t / k for name, t in times.items()}


def speed(make_learner, k: int, rank: int, steps: int, repeats: int) -> dict:
    """LoRA population of k vs k solo LoRA learners vs a full-parameter population of k."""
    full_cfg, data, hp = make_learner()
    lora_cfg = grpo.Config(**{**full_cfg.__dict__, "lora": lora.LoraConfig(rank=rank)})
    hp = hp._replace(learning_rate=jnp.float32(1e-3))
    chunk = lambda s, d: grpo.train_chunk(lora_cfg, d, s, steps)  # noqa: E731
    # k solo learners, one after another. A process per learner would compile the same
    # program k times: compiled once here and counted k times.
    state = grpo.init(lora_cfg, data, jax.random.PRNGKey(0), hp)
    t0 = time.perf_counter()
    compiled = jax.jit(chunk).lower(state, data).compile()
    solo_compile, solo_run = k * (time.perf_counter() - t0), 0.0
    for seed in range(k):
        state = grpo.init(lora_cfg, data, jax.random.PRNGKey(seed), hp)
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(state, data))
        solo_run += time.perf_counter() - t0
    states = _population(lora_cfg, data, hp, k)
    t0 = time.perf_counter()
    pop_fn = jax.jit(jax.vmap(chunk, in_axes=(0, None)), donate_argnums=0)
    compiled = pop_fn.lower(states, data).compile()
    pop_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(states, data))
    pop_run = time.perf_counter() - t0
    out = {
        "learners": k, "rank": rank, "steps": steps,
        "solo_compile_s": solo_compile, "solo_run_s": solo_run,
        "pop_compile_s": pop_compile, "pop_run_s": pop_run,
    }  # fmt: skip
    print_sequential(out)  # before the breakdowns, which compile ten more programs
    out["lora"] = _breakdown(lora_cfg, data, hp, k, repeats)
    out["full"] = _breakdown(full_cfg, data, hp, k, repeats)
    return out


def map_speed(make_learner, k: int, rank: int, steps: int, repeats: int) -> dict:
    """Seconds per learner-step of one population of k LoRA learners (default learner) under
    each `learner_map`: vmapped (the base's products over the stacked learners) and sequential
    (one learner at a time; rljax.parallel.learner_axis.map_learners), after a warm-up call."""
    full_cfg, data, hp = make_learner()
    cfg = grpo.Config(**{**full_cfg.__dict__, "lora": lora.LoraConfig(rank=rank)})
    hp = hp._replace(learning_rate=jnp.float32(1e-3))
    one = lambda state, d: grpo.train_chunk(cfg, d, state, steps)  # noqa: E731
    out = {"learners": k, "rank": rank, "steps": steps}
    for mode in learner_axis.LEARNER_MAPS:
        # As the LM trainer maps its learners: a population of one stays vmapped over one
        # (rljax.train.lm_experiment.spec sets unbatch_one=False).
        fn = jax.jit(
            functools.partial(learner_axis.map_learners, one, mode=mode, unbatch_one=False)
        )
        states = _population(cfg, data, hp, k)
        t0 = time.perf_counter()
        jax.block_until_ready(fn(states, data))
        out[f"{mode}_first_s"] = time.perf_counter() - t0  # compile and one call
        out[f"{mode}_s"] = _timed(fn, (states, data), repeats) / (k * steps)
    return out


def print_map_speed(r: dict) -> None:
    print(
        f"{r['learners']} LoRA learners (rank {r['rank']}), default arithmetic learner, "
        f"{r['steps']} RL steps per call: per learner-step vmap {1e3 * r['vmap_s']:.0f} ms, "
        f"sequential {1e3 * r['sequential_s']:.0f} ms ({r['sequential_s'] / r['vmap_s']:.2f}x); "
        f"compile + first call {r['vmap_first_s']:.0f} s / {r['sequential_first_s']:.0f} s",
        flush=True,
    )


def print_sequential(r: dict) -> None:
    k, steps = r["learners"], r["steps"]
    solo = r["solo_compile_s"] + r["solo_run_s"]
    pop = r["pop_compile_s"] + r["pop_run_s"]
    print(
        f"{k} LoRA learners (rank {r['rank']}) x {steps} RL steps, default arithmetic learner: "
        f"{k} sequential solo runs {solo:.1f} s ({r['solo_compile_s']:.1f} s compiling: one "
        f"compile counted {k} times), one "
        f"population {pop:.1f} s ({r['pop_compile_s']:.1f} s compiling) -> population "
        f"{solo / pop:.2f}x faster with compiles, {r['solo_run_s'] / r['pop_run_s']:.2f}x "
        "on the steps alone",
        flush=True,
    )


def print_speed(r: dict) -> None:
    k = r["learners"]
    print(f"per learner-step, populations of {k} (ms per learner):")
    names = list(r["lora"])
    print("| learners | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for kind in ("full", "lora"):
        row = " | ".join(f"{1e3 * r[kind][n]:.0f}" for n in names)
        print(f"| {k} {kind} | {row} |")
    ratio = " | ".join(f"{r['full'][n] / r['lora'][n]:.2f}x" for n in names)
    print(f"| full / LoRA | {ratio} |", flush=True)


def _micro_step(model, lcfg, rows, seq):
    """One learner's micro-step: loss and gradient of its completions' log-probs, then Adam."""
    prompt = seq // 2
    opt = optax.scale_by_adam(b2=0.99)

    def step(base, adapters, opt_state, tokens):
        def loss(adapters):
            params = lora.with_base(lcfg, base, adapters)
            mask = jnp.ones((rows, prompt), jnp.int32)
            done = jnp.ones((rows, seq - prompt), jnp.int32)
            logp, _ = completion_log_probs(
                params, model, tokens[:, :prompt], mask, tokens[:, prompt:], done
            )
            return -jnp.mean(logp)

        grads = jax.grad(loss)(adapters)
        updates, opt_state = opt.update(grads, opt_state, adapters)
        return jax.tree.map(lambda p, u: p - 1e-4 * u, adapters, updates), opt_state

    return step, opt


def _mapped(step, learner_map, devices, base, adapters, opt_state, tokens):
    """`step` over the population (`rljax.parallel.learner_axis.map_learners`, devices blocks)."""
    one = lambda learner, base: ((*step(base, *learner), learner[2]), ())  # noqa: E731
    learners = (adapters, opt_state, tokens)
    out, _ = learner_axis.map_learners(
        one, learners, base, groups=devices, mode=learner_map, unbatch_one=False
    )  # as the LM trainer maps its learners (a population of one stays vmapped)
    return out[:2]


def memory(
    rank: int = 16,
    rows: int = 1,
    seq: int = 256,
    devices: int = 8,
    remat: bool = False,
    logits_chunk: int = 0,
    learner_map: str = "vmap",
) -> dict:
    """Compiled memory of a LoRA population's micro-step at the Qwen2.5-1.5B shape (module
    docstring). Needs `devices` (fake) devices."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    model = TransformerConfig(max_len=seq, remat=remat, logits_chunk=logits_chunk, **QWEN25_15B)
    lcfg = lora.LoraConfig(rank=rank)
    base = jax.eval_shape(lambda: init_params(model, jax.random.PRNGKey(0)))
    adapters = lora.abstract_adapters(base, lcfg)
    base_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(base))
    adapter_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(adapters))
    step, opt = _micro_step(model, lcfg, rows, seq)
    mesh = Mesh(np.asarray(jax.devices()[:devices]), ("seeds",))  # automatic sharding
    replicated = NamedSharding(mesh, PartitionSpec())
    split = NamedSharding(mesh, PartitionSpec("seeds"))
    per_device = {}
    for per in (1, 2):
        k = per * devices

        def stacked(x, k=k):
            return jax.ShapeDtypeStruct((k, *x.shape), x.dtype, sharding=split)

        args = (
            jax.tree.map(
                lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=replicated), base
            ),
            jax.tree.map(stacked, adapters),
            jax.tree.map(stacked, jax.eval_shape(opt.init, adapters)),
            jax.ShapeDtypeStruct((k, rows, seq), jnp.int32, sharding=split),
        )
        fn = jax.jit(functools.partial(_mapped, step, learner_map, devices), donate_argnums=(1, 2))
        t0 = time.perf_counter()
        stats = fn.lower(*args).compile().memory_analysis()
        total = (
            stats.argument_size_in_bytes + stats.output_size_in_bytes
            - stats.alias_size_in_bytes + stats.temp_size_in_bytes
        )  # fmt: skip
        per_device[per] = {"bytes": int(total), "temp": int(stats.temp_size_in_bytes),
                           "compile_s": time.perf_counter() - t0}  # fmt: skip
    extra = per_device[2]["bytes"] - per_device[1]["bytes"]
    fixed = per_device[1]["bytes"] - extra  # the base, its gradient-free activations' share
    return {
        "rank": rank, "rows": rows, "seq": seq, "devices": devices,
        "remat": remat, "logits_chunk": logits_chunk, "learner_map": learner_map,
        "base_bytes": int(base_bytes), "adapter_bytes": int(adapter_bytes),
        "state_bytes_per_learner": int(3 * adapter_bytes),  # adapters + Adam's two moments
        "per_device": per_device, "extra_learner_bytes": int(extra),
        "extra_over_base": extra / base_bytes,
        "learners_per_80gb": int((DEVICE_BYTES - fixed) // extra) if extra > 0 else None,
    }  # fmt: skip


def _setting(r: dict) -> str:
    chunk = f"logits_chunk={r['logits_chunk']}" if r["logits_chunk"] else "whole logits"
    return f"{r['learner_map']}, remat={'on' if r['remat'] else 'off'}, {chunk}"


def print_memory(r: dict) -> None:
    gb = 1e9
    print(
        f"Qwen2.5-1.5B shape, LoRA rank {r['rank']} on attention + MLP, float32, micro-batch "
        f"{r['rows']} x {r['seq']} tokens, {_setting(r)}, {r['devices']} fake CPU devices "
        f"(population axis over them, base replicated), compiled memory analysis:"
    )
    state = r["state_bytes_per_learner"]
    print(
        f"  base {r['base_bytes'] / gb:.2f} GB; one learner's adapters "
        f"{r['adapter_bytes'] / 1e6:.1f} MB, with Adam state {state / 1e6:.1f} MB "
        f"({state / r['base_bytes']:.2%} of the base)"
    )
    for per, s in r["per_device"].items():
        print(
            f"  {per} learner(s) per device: {s['bytes'] / gb:.2f} GB per device "
            f"(temp {s['temp'] / gb:.2f} GB), compiled in {s['compile_s']:.0f} s"
        )
    print(
        f"  each extra learner: {r['extra_learner_bytes'] / 1e6:.1f} MB = "
        f"{r['extra_over_base']:.2%} of the base's bytes; learners that fit on one 80 GB "
        f"device beside the base: {r['learners_per_80gb']}",
        flush=True,
    )


def print_memory_table(results: list[dict]) -> None:
    """`memory` runs side by side: one extra learner's bytes per setting."""
    print("| setting | 1 learner/device GB | 2 learners/device GB | extra learner MB | "
          "of the base | learners on 80 GB |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in results:
        one, two = (r["per_device"][k]["bytes"] / 1e9 for k in sorted(r["per_device"]))
        print(
            f"| {_setting(r)} | {one:.2f} | {two:.2f} | {r['extra_learner_bytes'] / 1e6:,.1f} | "
            f"{r['extra_over_base']:.2%} | {r['learners_per_80gb']} |",
            flush=True,
        )
