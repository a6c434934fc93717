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


def test_run_record_names_the_command_that_reproduces_a_run():
    import time

    started = time.perf_counter() - 2.0
    rec = machine.run_record("experiments/x.py", ["--seed", "1000"], started)
    assert rec["command"] == "python experiments/x.py --seed 1000"
    assert 2.0 <= rec["seconds"] < 60.0
    assert rec["machine"] == machine.describe()
    assert rec["load"].startswith("load average at the end: ")
    assert len(rec["date"]) == 10 and rec["date"][4] == "-"
    assert (
        machine.run_record("experiments/x.py", [], started)["command"] == "python experiments/x.py"
    )
