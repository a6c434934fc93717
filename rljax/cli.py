"""One validation and error layer for every command-line entry point.

Entry points (``experiments/*.py``, ``scripts/*.py``) use it in three places:

1. ``cli.quiet_logs()`` once at start: third-party INFO logs (absl, orbax, jax) never land in the
   middle of a progress bar.
2. Checks while parsing, before any data is built or anything compiles: ``check_int``,
   ``check_number``, ``check_choice``, ``check_keys``, ``check_workdir``, ``check_devices``
   (mesh shapes: ``rljax.parallel.mesh.resolve_shape``); ``config_override_problem`` for an
   ml_collections ``--config=file.py:arg`` and its ``--config.a.b=`` overrides;
   ``apply_overrides`` for a config file's per-environment settings.
   Each raises ``ConfigError`` with one line naming the field, the value and what is allowed.
3. ``cli.main(fn)`` around the body: a ``ConfigError`` (or any ``ValueError`` raised before
   training) prints ``error: <one line>`` and exits 2; any other failure prints one line and
   exits 1; ``--debug`` on the command line shows the full traceback instead. A run stopped by a
   signal exits ``128 + signal`` (``exit_code``).

This module imports nothing from jax (nor does ``rljax.checks``), so it can run before
``rljax.xla_flags.set_flags``.
"""

import argparse
import errno
import importlib.util
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

from rljax import checks

DEBUG_FLAG = "--debug"
EXIT_FAILED = 1  # the run started and failed (NaN loss, full disk, a bug)
EXIT_USAGE = 2  # bad input, found before anything ran


class ConfigError(ValueError):
    """Bad input found before anything ran; its message is one line."""


def quiet_logs() -> None:
    """Silences third-party INFO/DEBUG logs (absl, orbax, jax) so progress bars stay readable.

    Call once at the start of an entry point (before or after importing jax). Warnings and errors
    still print.
    """
    for name in ("absl", "orbax", "jax", "jax._src", "etils", "tensorstore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.WARNING)
        absl_logging.set_stderrthreshold(absl_logging.WARNING)
    except ImportError:  # pragma: no cover - absl ships with jax's dependencies
        pass


def debug_requested(argv: Iterable[str] | None = None) -> bool:
    """True if ``--debug`` is on the command line (default ``sys.argv``)."""
    return DEBUG_FLAG in (sys.argv if argv is None else list(argv))


def one_line(message: object) -> str:
    """The message on one line (newlines become ``; ``)."""
    text = str(message).strip()
    return "; ".join(part.strip() for part in text.splitlines() if part.strip()) or "(no message)"


def fail(message: object, code: int = EXIT_USAGE) -> NoReturn:
    """Prints ``error: <message>`` on one line to stderr and exits with ``code``."""
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def os_error_line(e: BaseException) -> str | None:
    """One line for a full disk / permission / read-only error, or a folder that cannot be made
    because a file is in its place, anywhere in ``e``'s chain."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return (
                f"no space left on the device writing {e.filename or 'outputs'}; free some "
                "space, then resume the run (resume=True)"
            )
        if isinstance(e, OSError) and e.errno == errno.EFBIG:
            return (
                f"file too large writing {e.filename or 'outputs'} (a file-size limit: ulimit -f); "
                "raise the limit, then resume the run (resume=True)"
            )
        if isinstance(e, OSError) and e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"cannot write {e.filename or 'outputs'}: {e.strerror}"
        if isinstance(e, OSError) and e.errno in (errno.EEXIST, errno.ENOTDIR) and e.filename:
            # a folder to create (a workdir, its checkpoints/) where a file is: os.makedirs
            # raises FileExistsError for the file itself, NotADirectoryError below one
            where = "is a file" if e.errno == errno.EEXIST else "lies under a file"
            return f"cannot create the folder {e.filename}: it {where}; allowed: a directory path"
        e = e.__cause__ or e.__context__
    return None


def exit_code(interrupted_by: int | None) -> int:
    """0 for a run that finished; ``128 + signal`` for one stopped by SIGINT/SIGTERM."""
    return 128 + int(interrupted_by) if interrupted_by else 0


def main(fn: Callable[[], int | None], *, debug: bool | None = None) -> NoReturn:
    """Runs an entry point's body with one-line errors and honest exit codes.

    Args:
      fn: the body; returns the exit code (``None``: 0).
      debug: show tracebacks (default: ``--debug`` is on the command line).
    """
    debug = debug_requested() if debug is None else debug
    try:
        code = fn()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr, flush=True)
        raise SystemExit(128 + 2) from None
    except Exception as e:  # noqa: BLE001 - the whole point: one line unless --debug
        if debug:
            raise
        disk = os_error_line(e)
        if disk is not None:
            fail(disk, EXIT_FAILED)
        if isinstance(e, ConfigError | ValueError):
            fail(e, EXIT_USAGE if isinstance(e, ConfigError) else EXIT_FAILED)
        fail(
            f"{type(e).__name__}: {one_line(e)} (rerun with {DEBUG_FLAG} for the traceback)",
            EXIT_FAILED,
        )
    raise SystemExit(code or 0)


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line (``error: ...``, exit 2), with
    ``--debug`` defined (``cli.main`` reads it: tracebacks instead of one-line errors)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument(
            DEBUG_FLAG, action="store_true", help="show tracebacks instead of one-line errors"
        )

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see {self.prog} --help)", EXIT_USAGE)


# ---- checks ------------------------------------------------------------------------------------


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` if it is an int in ``[low, high]``, else ``ConfigError`` naming ``name``
    (``rljax.checks.check_int``, the one integer validator, with the entry points' error type)."""
    try:
        return checks.check_int(name, value, low=low, high=high)
    except ValueError as e:
        raise ConfigError(str(e)) from None


def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``float(value)`` if it is a finite real number in the interval, else ``ConfigError``."""
    import math

    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        left = "(" if low_open or low is None else "["
        right = ")" if high_open or high is None else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ConfigError(
            f"{name}={value!r} is invalid; allowed: a finite number in {left}{lo}, {hi}{right}"
        )
    return float(value)


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices``, else ``ConfigError`` listing them."""
    choices = list(choices)
    if value not in choices:
        valid = ", ".join(str(c) for c in choices)
        raise ConfigError(f"{name}={value!r} is unknown; valid: {valid}")
    return value


def check_keys(where: str, given: Iterable[str], valid: Iterable[str]) -> None:
    """``ConfigError`` naming the first key of ``given`` not in ``valid``; lists the valid ones."""
    valid = list(valid)
    unknown = [k for k in given if k not in valid]
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; valid: {', '.join(sorted(valid)) or '(none)'}"
        )


def int_list(flag: str, text: str, *, low: int = 1) -> list[int]:
    """Comma-separated integers ``>= low`` from ``text``, or ``ConfigError`` naming ``flag``.

    Call it right after parsing, so a bad list stops the script before anything starts.
    """
    items = [v.strip() for v in str(text).split(",")]
    try:
        values = [int(v) for v in items]
    except ValueError:
        bad = next(v for v in items if not _is_int_text(v))
        raise ConfigError(
            f"{flag}={text!r} has {bad!r}; allowed: comma-separated integers >= {low}, e.g. 1,8"
        ) from None
    for v in values:
        if v < low:
            raise ConfigError(
                f"{flag}={text!r} has {v}; allowed: comma-separated integers >= {low}"
            )
    return values


def _is_int_text(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def check_workdir(flag: str, path: str) -> str:
    """``path`` if it can be a writable output directory, else ``ConfigError`` naming ``flag``.

    A path that is an existing file, lies under a file, or whose nearest existing ancestor is not
    writable fails here, before anything runs. Nothing is created.
    """
    if not path:
        raise ConfigError(f"{flag}={path!r} is invalid; allowed: a directory path")
    path = os.path.abspath(os.path.expanduser(path))
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        what = "is a file" if probe == path else f"lies under the file {probe}"
        raise ConfigError(f"{flag}={path} {what}; allowed: a directory path")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag}={path}: {probe} is not writable; allowed: a writable directory")
    # os.access answers "yes" for root whatever the mode, and knows nothing of read-only mounts
    # or special file systems: try a write (a nameless temporary file, gone when closed).
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        raise ConfigError(
            f"{flag}={path}: cannot write in {probe} ({e.strerror}); allowed: a writable directory"
        ) from None
    return path


def check_devices(name: str, requested: int, available: int, what: str = "devices") -> int:
    """``requested`` if ``1 <= requested <= available``, else ``ConfigError``."""
    check_int(name, requested, low=1)
    if requested > available:
        raise ConfigError(
            f"{name}={requested} asks for more {what} than the {available} there are; "
            f"allowed: 1..{available}"
        )
    return requested


def parse_config_flags(argv: list[str], make_flags: Callable, example: str):
    """Parses an ml_collections entry point's command line; every error is one ``ConfigError``.

    Args:
      argv: the command line (``argv[0]`` is the script).
      make_flags: ``argv -> absl FlagValues`` defining ``--config`` (a config file) and the rest.
      example: a valid ``--config=...`` for the message when it is missing.

    Returns:
      The parsed FlagValues, with ``--config`` set.
    """
    from absl import flags  # absl only: this module still imports nothing from jax

    problem = config_override_problem(argv)
    if problem is not None:
        raise ConfigError(problem)
    if not any(a.startswith("--config=") or a == "--config" for a in argv[1:]):
        raise ConfigError(f"--config is required, e.g. {example}")
    fv = make_flags(argv)
    try:
        fv(argv)
    except flags.UnrecognizedFlagError as e:
        # the flags this script defines (not the --config.<field> overrides given, which absl
        # registers as flags too: listing them as "valid" would name the user's own input)
        own = (n for n in fv if n != "config" and not n.startswith("config."))
        valid = ", ".join(["--config, --config.<field>=<value>", *(f"--{n}" for n in own)])
        raise ConfigError(f"unknown flag --{e.flagname}; valid: {valid}") from None
    except flags.Error as e:
        raise ConfigError(one_line(e)) from None
    if fv["config"].value is None:
        raise ConfigError(f"--config is required, e.g. {example}")
    if "workdir" in fv and fv["workdir"].value:  # every entry point's output folder, one rule
        check_workdir("--workdir", fv["workdir"].value)
    return fv


def config_override_problem(argv: list[str], flag: str = "--config") -> str | None:
    """One line about a bad ``--config=file.py:arg`` or an override it does not define, or ``None``.

    Loads the config file itself (``get_config(arg)``) and walks every ``--config.a.b=value``
    override, naming the first unknown key and the valid keys at its level: ml_collections
    would raise a bare ``AttributeError`` deep in flag parsing. Works for any ml_collections
    entry point (``flag``: the config flag's name).
    """
    specs = [a.split("=", 1)[1] for a in argv if a.startswith(f"{flag}=")]
    if not specs:
        return None
    spec = specs[-1]
    path, _, arg = spec.partition(":")
    if not os.path.isfile(path):
        return f"{flag}={spec}: {path} is not a file; allowed: a config file such as configs/ppo.py"
    module_spec = importlib.util.spec_from_file_location("_config_file", path)
    if module_spec is None or not path.endswith(".py"):
        return f"{flag}={spec}: {path} is not a Python config file; allowed: e.g. configs/ppo.py"
    config_module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(config_module)
    if not hasattr(config_module, "get_config"):
        return f"{flag}={spec}: {path} defines no get_config(arg)"
    try:
        base = config_module.get_config(arg or None)
    except ValueError as e:
        return f"{flag}={spec}: {one_line(e)}"
    for arg_ in argv:
        if not arg_.startswith(f"{flag}."):
            continue
        node = base
        keys = arg_[len(flag) + 1 :].split("=", 1)[0].split(".")
        for depth, key in enumerate(keys):
            if not hasattr(node, "keys") or key not in node:
                where = ".".join(keys[:depth]) or "the top level"
                valid = ", ".join(sorted(node.keys())) if hasattr(node, "keys") else "(a leaf)"
                return f"{flag}.{'.'.join(keys)}: unknown key {key!r} at {where}; valid: {valid}"
            node = node[key]
    return None


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested mapping (e.g. a ``ConfigDict``) as a flat ``{"a.b": value}`` dict."""
    flat = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if hasattr(value, "items"):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def apply_overrides(config, overrides: dict[str, Any]):
    """Sets each dotted key of ``overrides`` (``{"ppo.num_envs": 16, ...}``: a config file's
    per-environment settings) on the ConfigDict ``config`` in place and returns it.

    Raises:
      KeyError: a key that the config does not define, naming the valid keys at that level.
    """
    for dotted, value in overrides.items():
        node = config
        *parents, leaf = dotted.split(".")
        for name in [*parents, leaf]:
            if name not in node:
                raise KeyError(f"override {dotted!r}: no key {name!r}; valid: {', '.join(node)}")
            if name != leaf:
                node = node[name]
        node[leaf] = value
    return config
