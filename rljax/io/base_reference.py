"""Which frozen base a run's checkpoints belong to: a digest of its parameters, checked on resume.

LoRA checkpoints hold adapters only, which mean something only over the base they were trained
on (and every run's KL reference is that base). A run stores the base's digest (SHA-256 over the
leaves' paths, shapes, dtypes and bytes) as the field `base_sha256` of its config fingerprint
(`rljax.io.fingerprint`, written once the workdir is ready); a resume whose base digests
differently is refused once the base is built, before anything compiles.

    # after building the base, before the loop writes the fingerprint:
    base_reference.record(config, workdir, base_params, resume=resume)  # sets config[FIELD]
"""

from __future__ import annotations

import hashlib

import jax
import numpy as np

from rljax.io import fingerprint

FIELD = "base_sha256"  # the fingerprint field; declare it mutable for the early config check


class BaseChangedError(ValueError):
    """Resuming over a base other than the one the checkpoints were trained on."""


def digest(params) -> str:
    """SHA-256 (hex) of a parameter pytree: leaf paths, shapes, dtypes and bytes."""
    h = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_leaves_with_path(jax.device_get(params)):
        leaf = np.asarray(leaf)
        h.update(f"{jax.tree_util.keystr(path)}|{leaf.shape}|{leaf.dtype}|".encode())
        h.update(np.ascontiguousarray(leaf).tobytes())
    return h.hexdigest()


def check(workdir: str, params, *, resume: bool) -> str:
    """The base's digest; on resume also compared with the one the workdir's fingerprint holds
    (a run from before base references holds none and passes). Raises BaseChangedError."""
    value = digest(params)
    saved = (fingerprint.load(workdir) or {}).get(FIELD) if resume else None
    if saved is not None and saved != value:
        raise BaseChangedError(
            f"cannot resume {workdir}: its checkpoints were trained over the base with "
            f"{FIELD} {saved[:16]}..., this run's base has {value[:16]}...; use the same base "
            "(model.path, model and sft fields) or start a fresh run"
        )
    return value


def record(config: dict, workdir: str, params, *, resume: bool) -> None:
    """`check`, then the digest stored in the fingerprint dict `config` (as `FIELD`)."""
    config[FIELD] = check(workdir, params, resume=resume)
