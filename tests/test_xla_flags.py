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


def test_cpu_layout_gives_each_core_a_whole_number_of_agents():
    assert xla_flags.cpu_layout(1, cores=2) == (1, 1)
    assert xla_flags.cpu_layout(8, cores=2) == (2, 3)  # several devices: one spare thread
    assert xla_flags.cpu_layout(6, cores=4) == (3, 4)  # 4 does not divide 6
    assert xla_flags.cpu_layout(7, cores=4) == (1, 1)
    with pytest.raises(ValueError, match="population=0"):
        xla_flags.cpu_layout(0)


def test_thread_count_after_jax_import_raises(monkeypatch):
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    with pytest.raises(RuntimeError, match="before jax is imported"):
        xla_flags.set_flags(cpu_threads=1)


def test_cpu_devices_arg_reads_the_flag_and_names_a_bad_value():
    assert xla_flags.cpu_devices_arg(["--config=x", "--cpu_devices=2"], default=1) == 2
    assert xla_flags.cpu_devices_arg(["--config=x"], default=8) == 8
    with pytest.raises(ValueError, match="--cpu_devices=0 is invalid"):
        xla_flags.cpu_devices_arg(["--cpu_devices=0"], default=1)
