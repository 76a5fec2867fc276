"""Open a submission bundle without trusting it: every check here runs before anything is loaded.

A bundle is a folder or a zip holding ``model.keras``, ``vocab.json``, ``meta.json`` and, where
the rubric allows it, ``custom_layers.py`` (see :mod:`labs.common.submission`). This module:

- refuses bundles that are too large, zips with too many entries, entries that leave the
  archive (``../x``, ``/etc/x``), links, and entries that inflate too far (zip bombs), all from
  the archive's directory, before a byte is extracted; extraction then stops at the limit;
- accepts only Keras 3's ``.keras`` format: a zip with ``config.json`` and ``model.weights.h5``
  (an HDF5 file renamed ``.keras``, or a SavedModel folder, is refused), and nothing Keras does not
  write there: a table beside the weights would escape the parameter count and the similarity check;
- reads ``meta.json`` and ``vocab.json`` as plain JSON, with their sizes and nesting bounded, and
  ``vocab.json`` with only the keys the kit writes (data again);
- extracts only the files a bundle may hold, and never follows a link or opens anything but a
  plain file (a FIFO or a link to ``/dev/zero`` would never end).

Every way an archive can be broken (a bad CRC, an encrypted entry, an unknown compression method, a truncated
directory) is a ``malformed`` bundle. Failures raise :class:`BundleError` with a status (``malformed``,
``unsafe``, ``too-large``) and a message written for the student."""

from __future__ import annotations

import json
import os
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from autograder.status import MALFORMED, TOO_LARGE, UNSAFE
from labs.common.submission import EXPORT_ADVICE
from labs.common.submission import OPTIONAL_FILES as OPTIONAL
from labs.common.submission import REQUIRED_FILES as REQUIRED

MAX_ENTRIES = 64  # files in a bundle zip (it needs at most 6)
MAX_RATIO = 200  # uncompressed / compressed size of one entry: beyond this, a zip bomb
# meta.json, vocab.json, the model's config.json: each under 20 kB as the kit writes them. A layer module can
# read the last two (a custom layer's config is any JSON): bounded like the module itself (100 kB).
MAX_JSON_BYTES = 256_000
MAX_MODEL_ENTRIES = 16  # files inside model.keras (Keras writes 3)
# What Keras 3 writes into a .keras file. Anything else is data outside the weights, which the parameter count
# and the similarity check never see and a layer module could read: refused.
MODEL_ENTRIES = ("config.json", "metadata.json", "model.weights.h5")
# What the kit writes into vocab.json (labs.common.vocab.save_vocabularies); other keys are refused, for the
# same reason.
VOCAB_KEYS = ("format", "version", "task", "vocabularies")
VOCAB_NAMES = ("source", "target")  # the vocabularies a task's model reads
# Bytes of model.keras outside its three files (headers, the central directory): a few hundred in a file Keras
# writes. More is data before, between or after the entries, which zipfile skips and a layer could still read.
MAX_MODEL_OVERHEAD = 16_384
MAX_NAME_LENGTH = 255  # characters in an entry's name
# What a broken or hostile archive raises while it is read: all of them mean "malformed".
ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    RuntimeError,
    NotImplementedError,
    EOFError,
    OSError,
    ValueError,
    zlib.error,
    KeyError,
    IndexError,
    OverflowError,
)


class BundleError(Exception):
    """A bundle refused before loading; ``status`` is the gradebook's status column."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Bundle:
    folder: Path  # the extracted (or given) folder holding the bundle's files
    meta: dict
    vocab: dict  # the raw vocab.json
    model_config: dict  # config.json from inside model.keras
    files: list[str] = field(default_factory=list)
    size_bytes: int = 0

    @property
    def has_custom_layers(self) -> bool:
        return (self.folder / "custom_layers.py").is_file()


def _check_zip_member(info: zipfile.ZipInfo) -> str | None:
    """Why an archive entry is refused, or None."""
    name = info.filename
    if len(name) > MAX_NAME_LENGTH or any(ord(c) < 32 for c in name):
        return f"the entry {name[:60]!r}... has a name no file system should hold"
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (len(name) > 1 and name[1] == ":"):
        return f"the entry {name!r} points outside the bundle (path traversal)"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return f"the entry {name!r} is a symbolic link; bundles hold plain files only"
    if info.compress_size and info.file_size / info.compress_size > MAX_RATIO:
        return f"the entry {name!r} inflates {info.file_size / info.compress_size:.0f}-fold (a zip bomb?)"
    return None


def _checked_members(
    archive: zipfile.ZipFile, max_entries: int, what: str, prefix: str
) -> list[zipfile.ZipInfo]:
    """The archive's entries, once none is too many, points outside, is a link or inflates like a bomb."""
    members = archive.infolist()
    if len(members) > max_entries:
        raise BundleError(UNSAFE, f"{what} holds {len(members)} entries; at most {max_entries} are accepted")
    for info in members:
        problem = _check_zip_member(info)
        if problem:
            raise BundleError(UNSAFE, prefix + problem)
    return members


def _extract_zip(path: Path, into: Path, max_bytes: int) -> list[str]:
    """Extract the bundle's files; returns the names of the other files, which are left out."""
    try:
        archive = zipfile.ZipFile(path)
    except ARCHIVE_ERRORS as error:
        raise BundleError(MALFORMED, f"{path.name} is not a readable zip file ({error})") from None
    with archive:
        members = _checked_members(archive, MAX_ENTRIES, "the zip", "")
        declared = sum(info.file_size for info in members)
        if declared > max_bytes:
            raise BundleError(
                TOO_LARGE,
                f"the zip unpacks to {declared / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB",
            )
        files = [info for info in members if not info.is_dir()]
        roots = {PurePosixPath(info.filename).parts[0] for info in files}
        # A zip of the bundle *folder* (one top folder holding the files) is as good as a flat one.
        strip = 1 if len(roots) == 1 and all(len(PurePosixPath(i.filename).parts) > 1 for i in files) else 0
        written, left_out = 0, []
        for info in files:
            parts = PurePosixPath(info.filename).parts[strip:]
            if len(parts) != 1 or parts[0] not in REQUIRED + OPTIONAL:
                left_out.append(info.filename)
                continue  # a bundle's files only, flat: nothing else is ever written
            try:
                with archive.open(info) as source, open(into / parts[0], "xb") as target:
                    while chunk := source.read(1 << 20):
                        written += len(chunk)
                        if written > max_bytes:  # the directory lied about the sizes
                            raise BundleError(TOO_LARGE, f"the zip unpacks past {max_bytes / 1e6:.0f} MB")
                        target.write(chunk)
            except FileExistsError:
                raise BundleError(MALFORMED, f"the zip holds {parts[0]} twice") from None
            except ARCHIVE_ERRORS as error:
                raise BundleError(
                    MALFORMED,
                    f"{info.filename} cannot be read from the zip ({type(error).__name__}: {error})",
                ) from None
    return left_out


def _copy_folder(path: Path, into: Path, max_bytes: int) -> list[str]:
    """Copy the bundle's files; returns the names of the other entries, which are left out."""
    total, left_out = 0, []
    for entry in sorted(path.iterdir()):
        mode = os.lstat(entry).st_mode
        if stat.S_ISLNK(mode):
            raise BundleError(UNSAFE, f"{entry.name} is a symbolic link; bundles hold plain files only")
        if entry.name in REQUIRED + OPTIONAL:
            if not stat.S_ISREG(mode):
                raise BundleError(MALFORMED, f"{entry.name} is not a plain file")
            total += os.lstat(entry).st_size
            if total > max_bytes:
                raise BundleError(TOO_LARGE, f"the bundle is over {max_bytes / 1e6:.0f} MB")
            fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as source, open(into / entry.name, "wb") as target:
                target.write(source.read(max_bytes + 1))
        else:
            left_out.append(entry.name)
    return left_out


def _parse_json(data: bytes, what: str):
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:  # JSONDecodeError, and numbers too long to read
        raise BundleError(MALFORMED, f"{what} is not valid JSON ({str(error)[:200]})") from None
    except RecursionError:
        raise BundleError(MALFORMED, f"{what} is nested too deeply to be a bundle's JSON") from None


def _read_json(path: Path, what: str) -> dict:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise BundleError(TOO_LARGE, f"{what} is over {MAX_JSON_BYTES // 1000} kB")
    data = _parse_json(path.read_bytes(), what)
    if not isinstance(data, dict):
        raise BundleError(MALFORMED, f"{what} must hold a JSON object")
    return data


def _first_names(names: list[str]) -> str:
    """The first three of ``names`` for a message, each cut to 40 characters."""
    return ", ".join(repr(name[:40]) for name in names[:3]) + (", ..." if len(names) > 3 else "")


def read_model_config(path: Path) -> dict:
    """``config.json`` from inside a ``.keras`` file, refusing anything that is not Keras 3's format."""
    with open(path, "rb") as handle:
        head = handle.read(8)
    if head.startswith(b"\x89HDF"):
        raise BundleError(
            MALFORMED,
            "model.keras is an HDF5 (.h5) file renamed .keras; save with "
            "model.save('model.keras') in Keras 3 (or use labs.common.submission.export)",
        )
    try:
        archive = zipfile.ZipFile(path)
    except ARCHIVE_ERRORS:
        raise BundleError(
            MALFORMED, "model.keras is not a Keras 3 .keras file (it is not a zip archive)"
        ) from None
    with archive:
        members = _checked_members(archive, MAX_MODEL_ENTRIES, "model.keras", "inside model.keras: ")
        names = {info.filename for info in members}
        if "config.json" not in names or "model.weights.h5" not in names:
            raise BundleError(
                MALFORMED,
                "model.keras lacks config.json or model.weights.h5: it is not a "
                "Keras 3 model file (a SavedModel or a TF1 checkpoint is not accepted)",
            )
        outside = path.stat().st_size - sum(info.compress_size for info in members)
        if outside > MAX_MODEL_OVERHEAD:
            raise BundleError(
                MALFORMED,
                f"model.keras holds {outside:,} bytes outside its files (data before, between or after "
                f"them); {EXPORT_ADVICE}",
            )
        extra = sorted(names - set(MODEL_ENTRIES))
        if extra:
            raise BundleError(
                MALFORMED,
                f"model.keras holds {len(extra)} file(s) Keras does not write ({_first_names(extra)}): a "
                f"model file holds its config, its metadata and its weights only; {EXPORT_ADVICE}",
            )
        info = archive.getinfo("config.json")
        if info.file_size > MAX_JSON_BYTES:
            raise BundleError(TOO_LARGE, f"the model's config.json is over {MAX_JSON_BYTES // 1000} kB")
        try:
            data = archive.read(info)
        except ARCHIVE_ERRORS as error:
            raise BundleError(
                MALFORMED, f"the model's config.json cannot be read ({type(error).__name__})"
            ) from None
    config = _parse_json(data, "the model's config.json")
    if not isinstance(config, dict):
        raise BundleError(MALFORMED, "the model's config.json must hold a JSON object")
    return config


def open_bundle(path: str | Path, workdir: Path, *, max_bytes: int) -> Bundle:
    """Copy or extract the bundle at ``path`` into ``workdir`` (empty) and read what describes it."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        raise BundleError(MALFORMED, f"{path.name} cannot be read") from None
    if stat.S_ISLNK(mode):
        raise BundleError(UNSAFE, f"{path.name} is a symbolic link")
    if stat.S_ISDIR(mode):
        left_out = _copy_folder(path, workdir, max_bytes)
    elif stat.S_ISREG(mode):
        if os.lstat(path).st_size == 0:
            raise BundleError(MALFORMED, f"{path.name} is empty (0 bytes); {EXPORT_ADVICE}")
        if os.lstat(path).st_size > max_bytes:
            raise BundleError(
                TOO_LARGE,
                f"{path.name} is {os.lstat(path).st_size / 1e6:.1f} MB; the limit is "
                f"{max_bytes / 1e6:.0f} MB",
            )
        left_out = _extract_zip(path, workdir, max_bytes)
    else:
        raise BundleError(MALFORMED, f"{path.name} is neither a folder nor a zip file")
    files = sorted(p.name for p in workdir.iterdir())
    missing = [name for name in REQUIRED if name not in files]
    if missing:
        found = ", ".join(files) if files else "nothing"
        other = f"; not bundle files, left out: {_first_names(left_out)}" if left_out else ""
        nested = [name for name in left_out if PurePosixPath(name).name in missing]
        where = (
            f"; {_first_names(nested)} sit in folders of their own: a bundle's files are at the top of the "
            "zip (or all in one folder)"
            if nested
            else ""
        )
        if "custom_layers.py" not in files and any(name.endswith(".py") for name in left_out):
            where += "; a layer module travels as custom_layers.py, the name the export gives it"
        raise BundleError(
            MALFORMED,
            f"the bundle lacks {', '.join(missing)} (found: {found}{other}){where}; {EXPORT_ADVICE}",
        )
    meta = _read_json(workdir / "meta.json", "meta.json")
    vocab = _read_json(workdir / "vocab.json", "vocab.json")
    named = vocab.get("vocabularies")
    extra = sorted(set(vocab) - set(VOCAB_KEYS)) + sorted(
        set(named) - set(VOCAB_NAMES) if isinstance(named, dict) else ()
    )
    if extra:
        raise BundleError(
            MALFORMED,
            f"vocab.json holds key(s) the kit does not write ({_first_names(extra)}); {EXPORT_ADVICE}",
        )
    config = read_model_config(workdir / "model.keras")
    size = sum((workdir / name).stat().st_size for name in files)
    return Bundle(workdir, meta, vocab, config, files, size)
