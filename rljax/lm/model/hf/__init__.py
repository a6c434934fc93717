"""Hugging Face checkpoints and tokenizers in and out of rljax's one decoder.

config      config.json <-> `TransformerConfig` (Llama, Qwen2/2.5, Qwen3)
mapping     the one table from Hugging Face tensor names to rljax parameter paths
checkpoint  safetensors folders (single file or sharded index) -> parameters on a mesh, and back
tokenizer   tokenizer.json + chat template -> the left/right-padded id layout of rljax.lm
"""
