"""The decoder stack: one transformer and everything that reads, samples or adapts it.

decoder     the decoder-only transformer (pre-norm RMSNorm, RoPE, GQA, optional KV cache)
sampling    batched autoregressive sampling with the KV cache at fixed shapes
logprobs    per-token log-probabilities and entropies of completions
lora        low-rank adapters, unmerged or merged
tokenizer   the character-level tokenizer of the toy tasks
hf          Hugging Face config.json / safetensors / tokenizer.json in and out
pretrained  `--config.model.*` -> tokenizer, model config and (with a path) parameters
"""
