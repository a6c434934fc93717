"""rljax.lm: a library of language-model parts, with no run driver.

  model   the decoder stack: the transformer (`decoder`), KV-cache sampling, log-probs, LoRA,
          Hugging Face checkpoints and tokenizers (`hf`), the character tokenizer, and the
          `--config.model.*` loader (`pretrained`)
  tasks   verifiable tasks: the toy generators and verifiers, math files and answer checking,
          problems as token batches and device tables, rewards, pass@k

The learners that train on them are in `rljax.agents` (`grpo`, `stale_grpo`, `sft`); the runs
(toy and math front ends, the SFT base, reports, memory plans, meshes) in `rljax.train`.
"""
