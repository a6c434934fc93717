"""rljax.machine: the one-line machine description every benchmark prints."""

import os

import jax

from rljax import machine


def test_describe_names_cpu_cores_jax_and_devices():
    line = machine.describe()
    cpu, cores, version, devices = line.split(" | ")
    assert cpu == machine.cpu_model() and cpu
    assert cores == f"{os.cpu_count()} cores"
    assert version == f"jax {jax.__version__}"
    assert devices.endswith(f"x{jax.device_count()}")
    assert devices.startswith(jax.devices()[0].platform + ":")


def test_clock_and_avx512_come_from_one_read_of_cpuinfo():
    mhz, avx512 = machine.cpu_mhz_and_avx512()
    assert mhz >= 0.0 and isinstance(avx512, bool)
