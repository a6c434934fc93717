"""The base reference of a run: its digest is stored in the fingerprint and checked on resume."""

import numpy as np
import pytest

from rljax.io import base_reference, fingerprint


def _base(value=1.0):
    return {"block_0": {"q": {"kernel": np.full((3, 2), value, np.float32)}}, "head": np.ones(4)}


def test_digest_tells_bases_apart_by_values_shapes_and_dtypes():
    d = base_reference.digest(_base())
    assert d == base_reference.digest(_base()) and len(d) == 64
    assert d != base_reference.digest(_base(1.0 + 1e-7))  # one ulp of difference
    other = _base()
    other["head"] = other["head"].astype(np.float32)
    assert d != base_reference.digest(other)


def test_resume_over_another_base_is_refused_and_over_the_same_one_passes(tmp_path):
    workdir = str(tmp_path)
    config = {"seed": 0}
    base_reference.record(config, workdir, _base(), resume=False)
    fingerprint.save(workdir, config)  # what the loop does once the workdir is ready
    again = {"seed": 0}
    base_reference.record(again, workdir, _base(), resume=True)
    assert again[base_reference.FIELD] == config[base_reference.FIELD]
    with pytest.raises(base_reference.BaseChangedError, match="cannot resume .*base_sha256"):
        base_reference.check(workdir, _base(2.0), resume=True)
    base_reference.check(workdir, _base(2.0), resume=False)  # a fresh run: nothing to compare


def test_a_run_from_before_base_references_resumes(tmp_path):
    fingerprint.save(str(tmp_path), {"seed": 0})  # no base_sha256 field
    assert len(base_reference.check(str(tmp_path), _base(), resume=True)) == 64
