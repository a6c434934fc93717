"""rljax: a JAX-first reinforcement-learning research codebase."""

from setuptools import find_packages, setup

setup(
    name="rljax",
    version="0.1.0",
    description="Pure-functional, jitted, sharded reinforcement learning in JAX.",
    packages=find_packages(include=["rljax", "rljax.*"]),
    package_data={"rljax": ["csrc/*.cc"]},  # built on first use (rljax.prng_kernel)
    python_requires=">=3.11",
    install_requires=[
        "jax>=0.7",
        "flax>=0.10",
        "optax>=0.2.4",
        "orbax-checkpoint>=0.11",
        "chex>=0.1.89",
        "numpy>=1.26",
        "ml-collections>=1.0",
        "absl-py>=2.1",
        "gymnax>=0.0.9",
        "tensorflow-datasets>=4.9.7",
        "array-record>=0.5",
        "matplotlib>=3.8",
        "tqdm>=4.66",
        "importlib_resources>=6.0",
        "math-verify>=0.9",  # answer equivalence for math RLVR (rljax.lm.tasks.math_checker)
        "pyarrow>=14",  # Parquet data files (rljax.lm.tasks.math_data)
        "safetensors>=0.4",  # Hugging Face checkpoints in and out (rljax.lm.model.hf)
        "tokenizers>=0.19",  # tokenizer.json (rljax.lm.model.hf.tokenizer)
        "jinja2>=3.1.6",  # chat templates (sandboxed)
    ],
    extras_require={
        "dev": [
            "pytest>=8",
            "pytest-timeout>=2.3",
            "pytest-xdist>=3.5",
            "ruff>=0.6",
            "nbclient>=0.10",
            "nbformat>=5.10",
            "ipykernel>=6.29",
            "rlax>=0.1.9",  # reference implementations in tests (skipped where absent)
        ],
        # Only for scripts/build_hf_fixtures.py and the live parity test, in a separate venv:
        # pip install torch==2.13.0 (the CPU build) first, then pip install -e ".[hf]".
        "hf": ["torch>=2.4", "transformers>=4.51"],
        # brax tasks (rljax.envs.brax_env); brax 0.14.2 checked beside jax 0.10.2 on CPU.
        "brax": ["brax>=0.14"],
    },
)
