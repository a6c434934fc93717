"""Two JAX processes on 127.0.0.1 (gloo) train a sharded PPO population == one process.

scripts/launch_multiprocess.py starts 2 processes with 2 fake CPU devices each; the global mesh
is (2, 2) "seeds" x "data": each process creates and holds 2 of the 4 agents and splits each
agent's environments over its 2 devices. The reference is the plain single-device path of
rljax.train.experiment in this (pytest) process.
"""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from rljax import envs
from rljax.agents import ppo
from rljax.parallel import distributed, launch
from rljax.train import experiment

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGS = [
    "--num_seeds=4",
    "--num_envs=4",
    "--num_steps=8",
    "--num_epochs=1",
    "--num_minibatches=2",
    "--hidden=8",
    "--chunk_updates=1",
    "--num_chunks=2",
    "--seed=3",
]
CONFIG = ppo.Config(
    num_envs=4, num_steps=8, num_epochs=1, num_minibatches=2, num_updates=2, hidden=(8,)
)
RUN = experiment.RunConfig(
    env_name="CartPole-v1",
    workdir="",
    seed=3,
    num_seeds=4,
    hparams=(
        ("lr", 2.5e-4),
        ("clip_eps", 0.2),
        ("ent_coef", 0.01),
        ("vf_coef", 0.5),
        ("gamma", 0.99),
        ("gae_lambda", 0.95),
    ),
)


def _reference():
    env = envs.make(RUN.env_name)
    points = experiment.validate_run(RUN, ppo, CONFIG)
    states = experiment.init_population(ppo, CONFIG, env, RUN, points)
    chunk_fn = experiment.make_chunk_fn(ppo, CONFIG, env, 1)
    metrics = []
    for _ in range(2):
        states, m = chunk_fn(states)
        metrics.append(jax.device_get(m))
    params = {
        "params/" + jax.tree_util.keystr(path): np.asarray(leaf)
        for path, leaf in jax.tree_util.tree_leaves_with_path(jax.device_get(states.params))
    }
    return params, {k: np.concatenate([m[k] for m in metrics], 1) for k in metrics[0]}


@pytest.mark.timeout(300)
def test_two_processes_match_single_process(tmp_path):
    out = tmp_path / "two"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [
        sys.executable,
        os.path.join(ROOT, "scripts", "launch_multiprocess.py"),
        "--num_processes=2",
        "--devices_per_process=2",
        "--timeout_s=270",
        "--",
        sys.executable,
        os.path.join(ROOT, "scripts", "train_sharded.py"),
        "--mesh_shape=2,2",
        "--mesh_axes=seeds,data",
        "--rules=seeds_and_envs",
        f"--out={out}",
        *FLAGS,
    ]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=290)
    log = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, log
    assert "[p0] process 0/2: agents 0..1 of 4" in proc.stdout, log
    assert "[p1] process 1/2: agents 2..3 of 4" in proc.stdout, log

    got = dict(np.load(out / "result.npz"))
    want_params, want_metrics = _reference()
    assert {k for k in got if k.startswith("params/")} == set(want_params)
    for key, want in want_params.items():
        np.testing.assert_allclose(got[key], want, rtol=2e-5, atol=2e-6, err_msg=key)
    for key, want in want_metrics.items():
        np.testing.assert_allclose(got["metrics/" + key], want, rtol=2e-5, atol=2e-6, err_msg=key)
    # A real difference would show: the agents' parameters are not all the same.
    kernels = [v for k, v in want_params.items() if "kernel" in k]
    assert not np.allclose(kernels[0][0], kernels[0][1])


def test_from_env_and_validation():
    cfg = distributed.from_env(
        {
            distributed.ENV_COORDINATOR: "127.0.0.1:1234",
            distributed.ENV_NUM_PROCESSES: "2",
            distributed.ENV_PROCESS_ID: "1",
        }
    )
    assert (cfg.coordinator_address, cfg.num_processes, cfg.process_id) == ("127.0.0.1:1234", 2, 1)
    distributed.validate(cfg)
    assert distributed.from_env({}) == distributed.DistributedConfig()
    with pytest.raises(ValueError, match="process_id=2 is invalid; allowed: 0..1"):
        distributed.validate(distributed.DistributedConfig("h:1", 2, 2))
    with pytest.raises(ValueError, match="coordinator_address='' is invalid"):
        distributed.validate(distributed.DistributedConfig("", 2, 0))
    with pytest.raises(ValueError, match="cpu_collectives='nccl' is invalid"):
        distributed.validate(distributed.DistributedConfig(cpu_collectives="nccl"))
    with pytest.raises(ValueError, match="RLJAX_NUM_PROCESSES='two' is invalid"):
        distributed.from_env({distributed.ENV_NUM_PROCESSES: "two"})
    env = launch.process_env(
        1, 2, 999, 3, base={"XLA_FLAGS": "--a --xla_force_host_platform_device_count=8"}
    )
    assert env["XLA_FLAGS"] == "--a --xla_force_host_platform_device_count=3"
    assert env[distributed.ENV_PROCESS_ID] == "1" and env[distributed.ENV_COORDINATOR].endswith(
        ":999"
    )


def test_local_rows_on_one_process():
    from rljax.parallel import mesh as mesh_lib
    from rljax.parallel import sharding

    mesh = mesh_lib.make_mesh(mesh_lib.MeshConfig((4, 2), ("seeds", "data")))
    s = sharding.tree_shardings(mesh, {"x": np.zeros((8, 4))}, ((".*", ("seeds", "data")),))["x"]
    assert distributed.local_rows(s, (8, 4)) == slice(0, 8)  # one process holds everything
    local = np.arange(32.0).reshape(8, 4)
    arr = distributed.host_local_to_global({"x": local}, {"x": s}, {"x": local})["x"]
    np.testing.assert_array_equal(np.asarray(arr), local)
    assert arr.sharding == s
    np.testing.assert_array_equal(distributed.to_host({"x": arr})["x"], local)


@pytest.mark.timeout(60)
def test_launcher_stops_the_others_when_one_process_fails(tmp_path):
    import io
    import time

    # Each process prints and leaves a marker; rank 1 fails only once all three have printed, so
    # the assertion on the relayed lines does not race the start-up of the others.
    code = (
        "import os, pathlib, sys, time\n"
        "rank = os.environ['RLJAX_PROCESS_ID']\n"
        "print('rank', rank, flush=True)\n"
        f"d = pathlib.Path({str(tmp_path)!r})\n"
        "(d / rank).touch()\n"
        "if rank == '1':\n"
        "    t = time.monotonic()\n"
        "    while len(list(d.iterdir())) < 3 and time.monotonic() - t < 30:\n"
        "        time.sleep(0.05)\n"
        "    sys.exit(3)\n"
        "time.sleep(120)\n"
    )
    sink = io.StringIO()
    t0 = time.monotonic()
    rc = launch.launch_local([sys.executable, "-c", code], 3, sink=sink, timeout_s=50)
    assert rc == 3
    assert time.monotonic() - t0 < 40  # the sleeping processes were terminated
    assert "[p1] rank 1" in sink.getvalue() and "[p0] rank 0" in sink.getvalue()
