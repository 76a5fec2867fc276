"""Atomic writing: a failure part-way leaves neither a partial file nor a temporary one."""

import pytest

from labs.common.errors import InputError
from labs.common.files import atomic_open, write_csv


def test_failure_while_writing_leaves_nothing(tmp_path):
    def rows():
        yield {"date": "2018-03-19"}
        raise RuntimeError("generator broke")

    with pytest.raises(RuntimeError):
        write_csv(tmp_path / "x.csv", ["date"], rows())
    assert list(tmp_path.iterdir()) == []


def test_failure_keeps_the_previous_file_intact(tmp_path):
    path = tmp_path / "x.csv"
    write_csv(path, ["date"], [{"date": "2018-03-19"}])
    before = path.read_bytes()
    with pytest.raises(ValueError):
        write_csv(path, ["date"], [{"date": "1"}, {"wrong": "column"}])
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["x.csv"]


def test_written_files_have_normal_permissions_and_unix_newlines(tmp_path):
    path = tmp_path / "x.csv"
    write_csv(path, ["a"], [{"a": "1"}])
    assert path.read_bytes() == b"a\n1\n"
    assert path.stat().st_mode & 0o644 == 0o644


def test_missing_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        with atomic_open(tmp_path / "missing" / "x.txt"):
            pass
