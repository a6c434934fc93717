"""rljax.xla_flags: a no-op once the flags are set, an error if they come too late."""

import os

import jax  # noqa: F401  (jax is imported, as in any test process)
import pytest

from rljax import xla_flags


def test_set_flags_is_a_no_op_when_already_set():
    before = os.environ["XLA_FLAGS"]
    xla_flags.set_flags()  # conftest set the scheduler flag and 8 devices before jax
    xla_flags.set_flags(num_cpu_devices=8)
    assert os.environ["XLA_FLAGS"] == before


def test_new_flags_after_jax_import_raise(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "")
    with pytest.raises(RuntimeError, match="before jax is imported"):
        xla_flags.set_flags()
