"""rljax.train.study: the skeleton's flags (shared, filled, forced by --quick, checked), its files
and its summary, on a toy study."""

import json
import os

import pytest

from rljax import cli
from rljax.train import study, verdicts


def _toy(**kwargs) -> study.Study:
    def run(args):
        return {"values": [args.seed + i for i in range(args.seeds)]}

    def report(args, out, record):
        s = {"n": len(out["values"]), "mean": 1.0, "mean_ci": [0.5, 1.5], "iqm": 1.0,
             "iqm_ci": [0.5, 1.5]}  # fmt: skip
        return study.Report(
            title="toy", claim="it holds", claims={"a": ("reproduced", "why")}, reason="why",
            arms={"x": s}, metric="m", extra={"steps": args.steps, "run": record["command"]},
            notes=study.claim_lines({"a": ("reproduced", "why")}),
        )  # fmt: skip

    def plot(args, out, rep):
        open(os.path.join(args.workdir, "toy.png"), "w").close()

    spec = dict(script="/x/experiments/toy.py", doc="A toy.\n\nMore.", workdir="runs/toy",
                run=run, report=report, plot=plot, seeds=0, steps=5, defaults={"seeds": 4},
                quick={"seeds": 3, "steps": 1}, low={"seeds": 2})  # fmt: skip
    return study.Study(**{**spec, **kwargs})


def test_flags_fill_force_and_check(tmp_path):
    toy = _toy()
    wd = ["--workdir", str(tmp_path)]
    args = toy.parse(wd)
    assert (args.seeds, args.steps, args.seed, args.quick) == (4, 5, 0, False)  # seeds filled
    args = toy.parse([*wd, "--quick"])
    assert (args.seeds, args.steps) == (3, 1)  # a filled flag takes quick's, steps is forced
    assert toy.parse([*wd, "--quick", "--seeds", "7"]).seeds == 7  # given: kept
    assert toy.parse([*wd, "--quick", "--steps", "9"]).steps == 1  # forced
    with pytest.raises(SystemExit):
        toy.parse([*wd, "--seeds", "1"])  # below low
    with pytest.raises(SystemExit):
        toy.parse([*wd, "--seed", "-1"])
    (tmp_path / "file").touch()
    with pytest.raises(SystemExit):
        toy.parse(["--workdir", str(tmp_path / "file" / "sub")])  # under a file


def test_bad_flags_are_one_line_errors(tmp_path, capsys):
    def check(args):
        raise cli.ConfigError("--steps=5 is invalid; allowed: none")

    with pytest.raises(SystemExit) as e:
        _toy(check=check).parse(["--workdir", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --steps=5 is invalid") and len(err.splitlines()) == 1


def test_options_take_the_defaults_type_or_the_one_given(tmp_path):
    toy = _toy(options={"draws": (10, "draws per step"), "lr": 0.5, "name": "a",
                        "tau": (None, "unset: tuned", float)}, low={"draws": 2})  # fmt: skip
    wd = ["--workdir", str(tmp_path)]
    args = toy.parse(wd)
    assert (args.draws, args.lr, args.name, args.tau) == (10, 0.5, "a", None)
    args = toy.parse([*wd, "--draws", "3", "--lr", "1", "--name", "b", "--tau", "2"])
    assert (args.draws, args.lr, args.name, args.tau) == (3, 1.0, "b", 2.0)
    assert isinstance(args.lr, float) and isinstance(args.draws, int)
    with pytest.raises(SystemExit):
        toy.parse([*wd, "--draws", "1"])  # below its low bound
    with pytest.raises(SystemExit):
        toy.parse([*wd, "--draws", "1.5"])  # not an int
    with pytest.raises(TypeError):
        _toy(options={"flag": True}).parser()  # bools are not plain options


def test_flags_a_study_does_not_ask_for_are_absent(tmp_path):
    toy = _toy(seeds=None, steps=None, defaults={}, quick=None, low={}, resume=True,
               workdir_flags=("--outdir",))  # fmt: skip
    args = toy.parse(["--outdir", str(tmp_path), "--resume"])
    assert vars(args).keys() == {"debug", "workdir", "seed", "resume"}
    with pytest.raises(SystemExit):
        toy.parse(["--quick"])


def test_main_writes_the_files_and_prints_the_summary(tmp_path, capsys):
    out = _toy().main(["--workdir", str(tmp_path), "--seed", "2"])
    assert out == {"values": [2, 3, 4, 5]}
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["verdict"] == verdicts.REPRODUCED and res["steps"] == 5
    assert res["run"].startswith("python experiments/toy.py --workdir")
    md = (tmp_path / "results.md").read_text()
    assert "**Verdict: reproduced.**" in md and "- *a*: **reproduced** — why." in md
    assert (tmp_path / "toy.png").exists()
    assert capsys.readouterr().out.strip() == md.strip()


def test_files_keep_their_own_layout(tmp_path):
    text = study.write(str(tmp_path), study.Files([{"a": 1}], "# rows\n"))
    assert text == "# rows\n" and json.loads((tmp_path / "results.json").read_text()) == [{"a": 1}]
    os.makedirs(tmp_path / "x")
    assert study.write(str(tmp_path / "x"), study.Files({"b": 2})) is None  # no markdown
    assert not (tmp_path / "x" / "results.md").exists()


def test_report_text():
    assert study.diff_text(0.123, [-0.01, 0.3]) == "+0.12 [-0.01, +0.30]"
    claims = {"a": ("holds", 1.0, [0.5, 1.5]), "b": ("fails", -1.0, [-2.0, -0.5]),
              "c": ("tie", 0.0, [-1.0, 1.0])}  # fmt: skip
    assert study.tally(claims, " (rules)") == (
        "1 of 3 checked claims hold, 1 fail, the rest are ties (rules); holds: a; fails: b."
    )
    assert study.checked_claims(claims, 1)[2] == "* a: **holds**, +1.0 [+0.5, +1.5]"
    assert study.Report("t", "c", claims, "r", {}, "m").verdict == verdicts.PARTLY


def test_a_study_that_fails_gives_its_workdir_lock_back(tmp_path):
    from rljax.io import workdir_lock

    def broken(args):
        assert workdir_lock.held(args.workdir)  # held while the study runs
        raise ValueError("a study's own error")

    with pytest.raises(ValueError, match="own error"):
        _toy(run=broken).main(["--workdir", str(tmp_path)])
    assert not workdir_lock.held(str(tmp_path))
