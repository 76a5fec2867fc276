"""Atomic file writing: a file is either complete or absent, never half-written.

Every file the kit writes goes to a temporary name in the destination folder first and is
renamed over the destination only once it is complete, so an interrupted run or a bad
argument never leaves a partial CSV behind.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from labs.common.errors import InputError


def check_run_folder(model_dir: str | Path) -> None:
    """Explain, in one line, why ``model_dir`` is no folder to read a run from (not there, or a file)."""
    if Path(model_dir).is_dir():
        return
    if Path(model_dir).exists():
        raise InputError(
            f"{str(model_dir)!r} is a file, not a run folder; give the folder a training run wrote "
            "(its --out)"
        )
    raise InputError(
        f"no folder {str(model_dir)!r}; give the folder a training run wrote (its --out), or train one with "
        "`python -m labs train ...`"
    )


def run_folder_hint(model_dir: str | Path) -> str:
    """What to give in place of ``model_dir``, a folder that holds no run: the runs inside it, where it has
    some (``runs`` for ``runs/tiny``), else the folder a training run wrote."""
    inside = sorted(str(found.parent) for found in Path(model_dir).glob("*/model.keras"))
    if inside:
        more = " (or another in it)" if len(inside) > 3 else ""
        return f"did you mean {' or '.join(repr(run) for run in inside[:3])}{more}?"
    return "give the folder a training run wrote (its --out), or train one with `python -m labs train ...`"


def read_run_metrics(model_dir: str | Path) -> dict:
    """A run folder's ``metrics.json`` (empty when it is missing or unreadable: older runs wrote less)."""
    try:
        metrics = json.loads((Path(model_dir) / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return metrics if isinstance(metrics, dict) else {}


def check_out_folder(out_dir: str | Path) -> None:
    """Refuse, before any work, an ``--out`` that is a file."""
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InputError(f"--out {str(out_dir)!r} is a file; give a folder for the model and its files")


def check_writable(path: str | os.PathLike) -> Path:
    """Return ``path`` as a Path, or raise InputError if it cannot be written.

    Checked before any work starts, so that a long generation does not fail at the end.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise InputError(
            f"output path {str(path)!r} is a folder; give a file name such as {str(path / 'data.csv')!r}"
        )
    if not folder.is_dir():
        raise InputError(
            f"cannot write {str(path)!r}: folder {str(folder)!r} does not exist; create it first"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {str(path)!r}: folder {str(folder)!r} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"cannot write {str(path)!r}: the file exists and is read-only")
    return path


def current_umask() -> int:
    """The process's umask, read without changing it where Linux says what it is (``/proc/self/status``).

    ``os.umask`` can only read it by setting another: the grader writes a student's files while its threads
    make each run's private folder, and a folder made in that moment would have had no mask at all."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open("/proc/self/status", encoding="ascii") as status:
            return int(next(line for line in status if line.startswith("Umask:")).split()[1], 8)
    umask = os.umask(0o077)  # no /proc (macOS): one thread at a time, a moment that errs on the private side
    os.umask(umask)
    return umask


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8", private: bool = False
) -> Iterator:
    """Open a temporary file beside ``path``; rename it to ``path`` only if the block succeeds. ``private``:
    the file is its owner's alone (0600), whatever the umask."""
    path = check_writable(path)
    binary = "b" in mode
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    except OSError as error:
        raise InputError(f"cannot write {str(path)!r}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, mode, **({} if binary else {"encoding": encoding, "newline": ""})) as handle:
            yield handle
        # mkstemp creates the file 0600; published files should have the usual permissions.
        os.chmod(tmp_name, 0o600 if private else 0o666 & ~current_umask())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


@contextlib.contextmanager
def folder_written_whole(out: str | os.PathLike, replace: bool = False) -> Iterator[Path]:
    """Yield an empty scratch folder beside ``out``; when the block succeeds, it becomes ``out``.

    ``out`` must be absent or an empty folder, or, with ``replace``, a folder to replace. If the
    block fails, the scratch folder is removed and ``out`` is left as it was: a reader never
    finds half of a release or of a bundle.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    old = None
    try:
        yield scratch
        os.chmod(scratch, 0o777 & ~current_umask())  # mkdtemp makes it private; the result should not be
        if out.is_dir() and replace and any(out.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / out.name)
        elif out.is_dir():
            out.rmdir()
        try:
            os.replace(scratch, out)
        except BaseException:
            if old is not None:  # put the earlier folder back
                os.replace(old / out.name, out)
                old = None
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # nothing left to remove after a successful rename
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def write_csv(
    path: str | os.PathLike, columns: Sequence[str], rows: Iterable[dict], private: bool = False
) -> int:
    """Write ``rows`` (dicts keyed by ``columns``) as UTF-8 CSV with ``\\n`` line ends; return the row
    count. ``private``: as in :func:`atomic_open`."""
    count = 0
    with atomic_open(path, private=private) as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), lineterminator="\n", extrasaction="raise")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
            count += 1
    return count


def read_csv(path: str | os.PathLike) -> list[dict]:
    """Read a CSV written by :func:`write_csv` into a list of dicts (all values are strings)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {str(path)!r}")
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def write_json(path: str | os.PathLike, data) -> None:
    """Write ``data`` as pretty, key-sorted UTF-8 JSON (stable bytes for the same data)."""
    with atomic_open(path) as handle:
        json.dump(data, handle, ensure_ascii=False, indent=2, sort_keys=True)
        handle.write("\n")


def write_text(path: str | os.PathLike, text: str, private: bool = False) -> None:
    """Write ``text`` atomically as UTF-8. ``private``: as in :func:`atomic_open`."""
    with atomic_open(path, private=private) as handle:
        handle.write(text)
