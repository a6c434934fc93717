"""The task datasets' tfds cache: a damaged cache is rebuilt with a line naming it, a data_dir
that is a file is one ValueError, and the build announces no download."""

import glob
import os

import pytest

from rljax.lm.tasks import builders


@pytest.mark.slow
def test_a_corrupt_dataset_cache_is_rebuilt_and_named(tmp_path, capsys):
    data_dir = str(tmp_path / "data")
    first = builders.load_problems("arithmetic", "test", data_dir)
    out = capsys.readouterr().out
    assert "Downloading" not in out and "building the arithmetic dataset" in out
    files = glob.glob(os.path.join(data_dir, "**", "*array_record*"), recursive=True)
    assert files
    for path in files:  # what a kill mid-write or a full disk leaves
        with open(path, "r+b") as f:
            f.truncate(10)
    again = builders.load_problems("arithmetic", "test", data_dir)
    out = capsys.readouterr().out
    assert "dataset cache" in out and "is unreadable" in out and "rebuilding it" in out
    assert [p.prompt for p in again] == [p.prompt for p in first]


def test_a_data_dir_that_is_a_file_is_one_error(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(ValueError, match=r"data_dir=.*file is a file; allowed: a directory"):
        builders.load_problems("arithmetic", "test", str(path))
