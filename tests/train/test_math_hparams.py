"""Every learner field reaches the math front end's `grpo.Hparams` from its command line
(`--config.rl.<field>=v`, `--config.sweep.<field>=a,b`), bad names and values are one line naming
them before anything is built, a checkpoint trains at `presets.PRETRAINED`'s learning rate, and a
step that sees no signal leaves a checkpoint's parameters as they were (weight decay aside, by
exactly its factor)."""

import json
import os

import jax
import numpy as np
import pytest
from test_math_pretrained import random_params, write_tokenizer
from test_math_rlvr import write_sample

from rljax import cli
from rljax.agents import grpo
from rljax.agents.grpo import presets
from rljax.lm.model.decoder import TransformerConfig
from rljax.lm.model.hf import checkpoint
from rljax.train import math_experiment, population

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = "--config=configs/grpo_math.py:gsm8k,tiny"


@pytest.fixture(scope="module")
def entry(load_entry):
    return load_entry("experiments/train_math.py")


def _parse(entry, *flags, monkeypatch):
    monkeypatch.chdir(ROOT)  # the config path is relative to the repository
    return entry.parse(["train_math.py", CONFIG, "--workdir=unused", *flags])


def _case(field: str) -> tuple[str, list]:
    """A preset and the values of `field` other than its own that `presets.check` accepts there
    (the first preset that has some: balance_delta needs one that samples dynamically)."""
    for preset, base in presets.PRESETS.items():
        if field in presets.CHOICES:
            candidates = [n for n in presets.CHOICES[field] if n != base[field]]
        elif field in grpo.INT_FIELDS:
            candidates = [v for v in (1, 2, 3, 0) if v != base[field]]
        else:
            v = float(base[field])
            candidates = [x for x in (v * 0.5, v * 2, 0.5, 0.1, 1.5, 2.0) if x != v]
        good = []
        for value in candidates:
            try:
                presets.check({**base, field: value})
            except ValueError:
                continue
            good.append(value)
        if good:
            return preset, good
    raise AssertionError(f"no preset accepts a value of {field} other than its own")


def _code(field: str, value):
    return presets.CHOICES[field].index(value) if field in presets.CHOICES else value


@pytest.mark.parametrize("field", grpo.Hparams._fields)
def test_every_hparams_field_is_set_and_swept_from_the_math_command_line(entry, field, monkeypatch):
    assert set(grpo.Hparams._fields) == set(presets.FIELDS)  # each field has a config entry
    preset, values = _case(field)
    run = _parse(
        entry,
        f"--config.preset={preset}",
        f"--config.rl.{field}={values[0]}",
        monkeypatch=monkeypatch,
    )
    got = np.asarray(getattr(math_experiment.hparams(run), field))
    np.testing.assert_allclose(got, [_code(field, values[0])], rtol=1e-6)
    if len(values) < 2:  # a two-valued choice has one other value: sweep it with the preset's
        values = [presets.PRESETS[preset][field], values[0]]
    text = ",".join(str(v) for v in values[:2])
    sweep = [f"--config.sweep.{field}={text}", "--config.num_seeds=2"]
    run = _parse(entry, f"--config.preset={preset}", *sweep, monkeypatch=monkeypatch)
    got = np.asarray(getattr(math_experiment.hparams(run), field))
    np.testing.assert_allclose(got, [_code(field, v) for v in values[:2]], rtol=1e-6)
    names = math_experiment.learner_names(run)
    assert len(names) == 4 and names[0] == f"{preset},{field}={values[0]}/seed0"


def test_learning_rate_reaches_hparams_and_a_checkpoint_takes_the_pretrained_rule(
    entry, tmp_path, monkeypatch
):
    run = _parse(entry, "--config.rl.learning_rate=1e-6", monkeypatch=monkeypatch)
    assert dict(run.rl) == {"learning_rate": 1e-6}
    np.testing.assert_allclose(math_experiment.hparams(run).learning_rate, [1e-6])
    # the tiny model keeps the presets' numbers
    tiny = _parse(entry, "--config.sweep.preset=grpo,dapo", monkeypatch=monkeypatch)
    np.testing.assert_allclose(math_experiment.hparams(tiny).learning_rate, [3e-4, 3e-4])
    np.testing.assert_allclose(math_experiment.hparams(tiny).weight_decay, [1e-4, 1e-4])
    # a checkpoint: presets.PRETRAINED over every preset, below rl.* and sweep.*
    folder = _checkpoint(tmp_path / "ckpt")
    ckpt = ["--config.model.path=" + folder, "--config.sweep.preset=grpo,dapo"]
    run = _parse(entry, *ckpt, monkeypatch=monkeypatch)
    hp = math_experiment.hparams(run)
    np.testing.assert_allclose(hp.learning_rate, [presets.PRETRAINED["learning_rate"]] * 2)
    np.testing.assert_allclose(hp.weight_decay, [0.0, 0.0])
    np.testing.assert_allclose(hp.kl_coef, [0.04, 0.0])  # each preset's own KL (its paper's)
    run = _parse(entry, *ckpt, "--config.rl.learning_rate=3e-6", monkeypatch=monkeypatch)
    np.testing.assert_allclose(math_experiment.hparams(run).learning_rate, [3e-6, 3e-6])
    run = _parse(entry, *ckpt, "--config.sweep.learning_rate=1e-6,2e-6", monkeypatch=monkeypatch)
    np.testing.assert_allclose(math_experiment.hparams(run).learning_rate, [1e-6, 2e-6] * 2)


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--config.learning_rate=1e-6", "unknown key 'learning_rate' at the top level; valid: "),
        ("--config.rl.learnin_rate=1e-6", "unknown key 'learnin_rate' at rl; valid: advantage, "),
        ("--config.rl.learning_rate=2.0", r"rl.learning_rate=2.0 is invalid; allowed: in \(0, 1\)"),
        ("--config.rl.learning_rate=nan", r"rl.learning_rate=nan is invalid; allowed: in \(0, 1\)"),
        ("--config.rl.eps_low=1.5", r"rl.eps_low=1.5 is invalid; allowed: in \[0, 1\]"),
        ("--config.rl.divergence=k4", "rl.divergence='k4' is unknown; valid: none, k1, k2"),
        (
            "--config.rl.num_epochs=0",
            r"rl.num_epochs=0 is invalid; allowed: an integer in \[1, 64\]",
        ),
        ("--config.sweep.kl_coef=0.01,-1", r"rl.kl_coef=-1.0 is invalid; allowed: a finite >= 0"),
        ("--config.sweep.kl_coef=0.01,x", "sweep.kl_coef='0.01,x' is not a comma-separated list"),
        ("--config.sweep.policy_loss=ppo_clip,ppo", "rl.policy_loss='ppo' is unknown; valid: "),
    ],
)
def test_bad_learner_fields_are_one_line_naming_them(entry, flag, message, monkeypatch):
    with pytest.raises(cli.ConfigError, match=message) as info:
        _parse(entry, flag, monkeypatch=monkeypatch)
    assert "\n" not in str(info.value)


def _checkpoint(folder) -> str:
    """A random Qwen2-layout checkpoint (d_model 32, 1 layer) and its tokenizer in `folder`."""
    tok = write_tokenizer(folder)
    cfg = TransformerConfig(
        vocab_size=tok.vocab_size + 4, d_model=32, n_layers=1, n_heads=4, d_ff=64, max_len=128,
        family="qwen2", n_kv_heads=2, tie_embeddings=True, eos_ids=tok.eos_ids, pad_id=tok.pad_id,
    )  # fmt: skip
    checkpoint.save(str(folder), random_params(cfg), cfg)
    return str(folder)


@pytest.mark.slow  # ~60 s: the entry point compiles a GRPO step of two learners
@pytest.mark.timeout(600)
def test_a_step_without_signal_leaves_a_checkpoint_unchanged_but_for_weight_decay(
    entry, tmp_path, monkeypatch
):
    """`rl.reward=none` (every reward 0, so every advantage 0) and no KL nor entropy term: the
    gradient is exactly 0, AdamW's step is 0 and the checkpoint's parameters come back bit for
    bit with weight_decay 0 (presets.PRETRAINED's). With weight decay w each of the step's
    num_epochs x num_minibatches optimizer steps scales every parameter by 1 - lr·w."""
    folder = _checkpoint(tmp_path / "ckpt")
    pairs = [(a, b) for a in range(6) for b in range(6)]
    train = write_sample(tmp_path / "train.jsonl", pairs[4:])
    test = write_sample(tmp_path / "test.jsonl", pairs[:4])
    captured = {}
    run_population = population.run

    def spy(spec, **kwargs):
        captured["result"] = run_population(spec, **kwargs)
        return captured["result"]

    monkeypatch.setattr(population, "run", spy)
    lr, decay = 1e-2, 0.5
    argv = ["train_math.py", CONFIG, f"--workdir={tmp_path}/run"]
    argv += [f"--config.data.train_path={train}", f"--config.data.test_path={test}"]
    argv += [f"--config.model.path={folder}", "--config.model.chat_template=plain"]
    argv += ["--config.sft.steps=0", "--config.run.steps=1", "--config.run.chunk_steps=1"]
    argv += ["--config.run.prompts_per_step=2", "--config.run.group_size=2"]
    argv += ["--config.run.eval_problems=2", "--config.eval.num_samples=1"]
    argv += ["--config.rl.reward=none", "--config.rl.divergence=none", "--config.rl.kl_coef=0"]
    argv += [f"--config.rl.learning_rate={lr}", f"--config.sweep.weight_decay=0,{decay}"]
    argv += ["--config.progress=False"]
    monkeypatch.chdir(ROOT)
    assert entry.main(argv) == 0
    loaded, _ = checkpoint.load(folder, max_len=96 + 8)
    trained = captured["result"].states.params
    with open(tmp_path / "run" / "results.json") as f:
        results = json.load(f)
    steps = presets.PRESETS["grpo"]["num_epochs"] * presets.PRESETS["grpo"]["num_minibatches"]
    names = ["grpo,weight_decay=0.0/seed0", f"grpo,weight_decay={decay}/seed0"]
    assert [results["hparams"][n]["weight_decay"] for n in names] == [0.0, decay]
    assert all(results["hparams"][n]["learning_rate"] == lr for n in names)
    rows = [json.loads(line) for line in open(tmp_path / "run" / "metrics.jsonl")]
    assert [r["adv/abs_mean"] for r in rows] == [0.0, 0.0]  # no signal reached the learners
    for path, base in jax.tree_util.tree_leaves_with_path(loaded):
        got = _at(trained, path)
        np.testing.assert_array_equal(got[0], np.asarray(base), err_msg=jax.tree_util.keystr(path))
        np.testing.assert_allclose(
            got[1], np.asarray(base) * (1 - lr * decay) ** steps, rtol=1e-5, atol=0,
            err_msg=jax.tree_util.keystr(path),
        )  # fmt: skip
        assert not np.array_equal(got[1], np.asarray(base))  # the comparison sees a change


def _at(tree, path):
    for key in path:
        tree = tree[key.key]
    return np.asarray(tree)
