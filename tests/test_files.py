"""Atomic writing: a failure part-way leaves neither a partial file nor a temporary one."""

import os
import stat

import pytest

from labs.common.errors import InputError
from labs.common.files import atomic_open, folder_written_whole, write_csv


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


def test_published_files_take_the_umask_without_setting_it(tmp_path, monkeypatch):
    """os.umask reads the mask only by setting another: the grader writes a student's files while its other
    threads make a run's private folder, which in that moment would have had no mask. The mask is read from
    /proc/self/status where Linux gives it, never set."""
    from labs.common.files import current_umask

    mask = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        monkeypatch.setattr(os, "umask", lambda *args: pytest.fail("os.umask was called"))
        with atomic_open(tmp_path / "gradebook.csv") as handle:
            handle.write("student\n")
        with folder_written_whole(tmp_path / "release") as scratch:
            (scratch / "README.md").write_text("hi", encoding="utf-8")
    finally:
        monkeypatch.undo()
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "gradebook.csv").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "release").stat().st_mode) == 0o750
