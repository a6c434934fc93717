"""A reproduction keeps each finished arm on disk and resumes from it; an interrupted arm stops.

A reproduction trains its arms one program (or one population) at a time and used to write its
results only at the end, so a run killed at minute 19 of 20 lost everything. Here:

* ``ArmStore``: a classic reproduction saves each arm's per-seed arrays the moment the arm ends
  (``<workdir>/arms/<name>.npz`` with the settings that made it); ``--resume`` loads every arm
  whose settings match and trains only the rest. Without ``--resume`` old arms are cleared.
* ``lm_population``: an LM reproduction's population lives in its own work directory; a finished
  one (its ``results.json`` written, its ``summary.json`` status ``done``, its ``config.json``
  equal to this run's) is reused, an unfinished one with matching config resumes from its last
  checkpoint, anything else trains afresh.
* ``cached``: the same for a coarser unit (an environment's whole result, any picklable value).
* ``stop_if_interrupted``: a population stopped by SIGINT/SIGTERM ends the study with one line
  (a verdict must never mix partial and full runs); the finished ones stay for the rerun.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile

import numpy as np

from rljax.io import files, fingerprint


class StudyInterrupted(RuntimeError):
    """An arm stopped before its budget: the study stops rather than judge a partial run."""


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", name).strip("_") or "arm"


class ArmStore:
    """Finished arms of one reproduction in ``<workdir>/arms``.

    Args:
      workdir: the reproduction's output directory.
      resume: keep and reuse matching arms (else any stored arm is deleted first).
      log: where the one-line notes go.
    """

    def __init__(self, workdir: str, *, resume: bool, log=print):
        self.dir = os.path.join(workdir, "arms")
        self.log = log
        if not resume and os.path.isdir(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir, exist_ok=True)

    def _paths(self, name: str) -> tuple[str, str]:
        base = os.path.join(self.dir, _safe(name))
        return base + ".npz", base + ".json"

    def load(self, name: str, settings: dict) -> dict[str, np.ndarray] | None:
        """The stored arrays of arm ``name`` if it finished with exactly ``settings``."""
        arrays, meta = self._paths(name)
        if not os.path.exists(meta):  # not finished (or never started): nothing to reuse
            return None
        try:
            stored = files.read_json(meta)
            if stored != json.loads(json.dumps(settings)):
                self.log(f"[rljax] {meta} was made with other settings; training {name} again")
                return None
            with np.load(arrays) as data:
                out = {k: data[k] for k in data.files}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:  # say which file
            where = meta if isinstance(e, ValueError) and meta in str(e) else arrays
            self.log(f"[rljax] {where} does not read ({type(e).__name__}: {e}); training "
                     f"{name} again")  # fmt: skip
            return None
        self.log(f"[rljax] reusing the finished arm {name} from {arrays}")
        return out

    def save(self, name: str, settings: dict, arrays: dict[str, np.ndarray]) -> None:
        """Stores a finished arm (arrays first, settings last: a half-written arm is no arm)."""
        path, meta = self._paths(name)
        np.savez(path + ".tmp.npz", **{k: np.asarray(v) for k, v in arrays.items()})
        os.replace(path + ".tmp.npz", path)
        with open(meta + ".tmp", "w") as f:
            json.dump(settings, f, sort_keys=True)
        os.replace(meta + ".tmp", meta)


def lm_population(run, mutable, config: dict | None = None) -> str:
    """``"done"`` (reuse), ``"resume"`` (continue from its checkpoints) or ``"fresh"``.

    Args:
      run: the population's ``LMRunConfig`` (its ``workdir`` is the population's).
      mutable: fields that may differ on resume (``lm_experiment.RESUMABLE_FIELDS``).
      config: the run's fingerprint as its trainer writes it
        (``lm_experiment.fingerprint_config(run)``); None: every field of ``run``.
    """
    import dataclasses

    config = dataclasses.asdict(run) if config is None else config
    saved = fingerprint.load(run.workdir)
    if saved is None or fingerprint.changes(saved, config, mutable):
        return "fresh"
    try:
        with open(os.path.join(run.workdir, "summary.json")) as f:
            status = json.load(f).get("status")
    except (OSError, ValueError):
        status = None
    # "done" only for the same budget and evaluation: a larger budget resumes and extends
    cosmetic = ("progress", "resume", "workdir", "cpu_devices")
    same = not fingerprint.changes(saved, config, cosmetic)
    if same and status == "done" and os.path.exists(os.path.join(run.workdir, "results.json")):
        return "done"
    return "resume"


def stop_if_interrupted(name: str, summary) -> None:
    """Raises ``StudyInterrupted`` (one line) if the population ``name`` did not finish."""
    if summary is not None and getattr(summary, "interrupted", False):
        raise StudyInterrupted(
            f"{name} was stopped (signal {summary.stop_signal}) at update "
            f"{summary.updates_done}: the study stops here rather than judge a partial arm; run "
            "the same command again to resume it (finished arms are reused)"
        )


def cached(workdir: str, name: str, settings: dict, compute, *, resume: bool, log=print):
    """``compute()`` of one finished unit (an environment's arms), kept in
    ``<workdir>/arms/<name>.pkl`` with the settings that made it; with ``resume`` a stored unit
    of equal settings is read back instead of computed."""
    import pickle

    path = os.path.join(workdir, "arms", f"{_safe(name)}.pkl")
    key = json.loads(json.dumps(settings, default=str))
    if resume and os.path.exists(path):
        try:
            with open(path, "rb") as f:
                stored_key, value = pickle.load(f)
            if stored_key == key:
                log(f"[rljax] reusing the finished {name} from {path}")
                return value
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            pass
    value = compute()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        pickle.dump((key, value), f)
    os.replace(path + ".tmp", path)
    return value
