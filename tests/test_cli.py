"""rljax.cli: one-line errors, honest exit codes, checks, quiet third-party logs."""

import errno
import logging
import signal

import pytest

from rljax import cli


def _exit(fn, capsys, **kw):
    with pytest.raises(SystemExit) as info:
        cli.main(fn, **kw)
    return info.value.code, capsys.readouterr().err


def test_main_exit_codes_and_one_line_errors(capsys):
    assert _exit(lambda: None, capsys, debug=False) == (0, "")
    assert _exit(lambda: cli.exit_code(signal.SIGTERM), capsys, debug=False)[0] == 143

    def bad_input():
        raise cli.ConfigError("num_seeds=0 is invalid; allowed: an integer >= 1")

    assert _exit(bad_input, capsys, debug=False) == (
        cli.EXIT_USAGE,
        "error: num_seeds=0 is invalid; allowed: an integer >= 1\n",
    )

    def bug():
        raise KeyError("x\ny")

    code, err = _exit(bug, capsys, debug=False)
    assert code == cli.EXIT_FAILED and err.count("\n") == 1
    assert err.startswith("error: KeyError: ") and "--debug" in err
    with pytest.raises(KeyError):
        cli.main(bug, debug=True)


def test_full_disk_and_permission_errors_are_one_line(capsys):
    def full():
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/runs/x/metrics.jsonl")
        except OSError as e:
            raise RuntimeError("orbax: save failed") from e

    code, err = _exit(full, capsys, debug=False)
    assert code == cli.EXIT_FAILED and err.count("\n") == 1
    assert "no space left on the device writing /runs/x/metrics.jsonl" in err

    def denied():
        raise PermissionError(errno.EACCES, "Permission denied", "/runs/x")

    code, err = _exit(denied, capsys, debug=False)
    assert code == cli.EXIT_FAILED and "cannot write /runs/x: Permission denied" in err


def test_argument_parser_errors_are_one_line(capsys):
    parser = cli.ArgumentParser(prog="tool")
    parser.add_argument("--n", type=int, default=1)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--n=x"])
    err = capsys.readouterr().err
    assert info.value.code == cli.EXIT_USAGE and err.count("\n") == 1
    assert err.startswith("error: argument --n: invalid int value: 'x' (see tool --help)")
    assert parser.parse_args(["--debug"]).debug


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: cli.check_int("n", 0, low=1), "n=0 is invalid; allowed: an integer >= 1"),
        (lambda: cli.check_int("n", True, low=0), "n=True is invalid; allowed: an integer >= 0"),
        (lambda: cli.check_int("n", 9, low=0, high=8), "allowed: an integer in [0, 8]"),
        (lambda: cli.check_number("lr", float("nan"), low=0), "lr=nan is invalid"),
        (lambda: cli.check_number("a", 0.0, low=0, low_open=True), "a finite number in (0, inf)"),
        (lambda: cli.check_choice("head", "x", ["mse", "qr"]), "head='x' is unknown; valid: mse"),
        (lambda: cli.check_keys("ppo", ["lr"], ["a", "b"]), "ppo: unknown key 'lr'; valid: a, b"),
        (lambda: cli.check_devices("--devices", 9, 8), "asks for more devices than the 8"),
    ],
)
def test_checks_name_field_value_and_allowed(call, message):
    with pytest.raises(cli.ConfigError) as info:
        call()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_check_workdir(tmp_path):
    assert cli.check_workdir("--workdir", str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")
    (tmp_path / "f").write_text("x")
    with pytest.raises(cli.ConfigError, match="--workdir=.*/f is a file"):
        cli.check_workdir("--workdir", str(tmp_path / "f"))
    with pytest.raises(cli.ConfigError, match="lies under the file"):
        cli.check_workdir("--workdir", str(tmp_path / "f" / "run"))
    with pytest.raises(cli.ConfigError, match="allowed: a directory path"):
        cli.check_workdir("--workdir", "")


def test_quiet_logs_silences_third_party_info():
    cli.quiet_logs()
    for name in ("absl", "orbax", "jax"):
        assert not logging.getLogger(name).isEnabledFor(logging.INFO)
        assert logging.getLogger(name).isEnabledFor(logging.WARNING)


def test_flatten():
    assert cli.flatten({"a": 1, "b": {"c": 2, "d": {"e": 3}}}) == {"a": 1, "b.c": 2, "b.d.e": 3}
