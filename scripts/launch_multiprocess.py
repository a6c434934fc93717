"""Runs one command as several JAX processes on this machine (a local stand-in for several hosts).

    PYTHONPATH=$PWD python scripts/launch_multiprocess.py --num_processes=2 \\
        --devices_per_process=2 -- python scripts/train_sharded.py --mesh_shape=2,2 \\
        --mesh_axes=seeds,data --num_seeds=4

Each process gets RLJAX_COORDINATOR_ADDRESS=127.0.0.1:<free port>, RLJAX_NUM_PROCESSES,
RLJAX_PROCESS_ID and (with --devices_per_process) that many fake CPU devices; the command calls
rljax.parallel.distributed.initialize(distributed.from_env()). Output lines are prefixed [pN].
On a GPU cluster or a TPU pod slice the scheduler starts the processes instead: docs/scaling.md.
"""

import argparse
import sys

from rljax import cli
from rljax.parallel import launch


def main() -> None:
    p = cli.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num_processes", type=int, default=2)
    p.add_argument("--devices_per_process", type=int, default=None, help="fake CPU devices each")
    p.add_argument("--port", type=int, default=0, help="coordinator port (0: a free one)")
    p.add_argument("--timeout_s", type=float, default=None, help="kill everything after this")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the command to run after --")
    cli.check_int("--num_processes", args.num_processes, low=1)
    if args.devices_per_process is not None:
        cli.check_int("--devices_per_process", args.devices_per_process, low=1)
    cli.check_int("--port", args.port, low=0, high=65535)
    if args.timeout_s is not None:
        cli.check_number("--timeout_s", args.timeout_s, low=0, low_open=True)
    sys.exit(
        launch.launch_local(
            command,
            args.num_processes,
            devices_per_process=args.devices_per_process,
            port=args.port,
            timeout_s=args.timeout_s,
        )
    )


if __name__ == "__main__":
    cli.main(main)
