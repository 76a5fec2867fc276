"""Hidden test sets: drawn from a secret seed, disjoint from the public splits, the same every time.

    python -m autograder hidden-set --task date-translation --seed-file secret.txt --out hidden/lab2

The secret file's bytes (any text the instructor keeps private) and the task name give the seed
through SHA-256, so the set cannot be regenerated without the file, and the same file always
gives the same set. Rows skip every row that appears in the public ``datasets/`` files. Dates
come from the generators' *test* split (dates the public training data never shows). Names are
half of seen words and half *unseen*, and the unseen ones use the **hidden** words: held out of
every public split, and left out of the student kit's name table, so that their spellings are
in no file a student has (see :mod:`labs.name_transliteration.data`).

Those hidden words are disjoint from the training data's words and the same every time, but not
secret: they derive from public tools, and a determined student can rebuild them. For an unseen
stratum that nobody without the instructor's files can rebuild, give a private word list:

    python -m autograder hidden-set --task name-transliteration --seed-file secret.txt \
        --words private-words.txt --out hidden/hw31

A task takes ``--words`` when its ``hidden_rows`` has a ``words`` parameter (the file's path; the
task reads and checks it, :mod:`labs.name_transliteration.private_words`). The set then records
the list's SHA-256 (not its words) in its manifest, so that a grade can tell which list it used.

A hidden-set folder holds:

- ``inputs.csv``: what the sandboxed model sees (``id``, ``source``; for lab 1, the dates whose
  probability is measured);
- ``targets.csv``: the answers and what the scorer reports by (never enters the sandbox);
- ``manifest.json``: task, size, a fingerprint of the secret (not the secret), the SHA-256 of
  both files, so that a grade can say which hidden set it used, and, for a set made with
  ``--words``, ``private_words_sha256``: the SHA-256 of the word list's bytes (``sha256sum FILE`` prints it).

The folder is private to its owner (``0700``, files ``0600``). Keep it, and the secret, outside
the kit's folder (the README's workflow uses ``../grading/``).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
from pathlib import Path

from labs import tasks
from labs.common.errors import InputError
from labs.common.files import folder_written_whole, read_csv, write_csv, write_json


def seed_from_secret(secret: bytes, task: str) -> int:
    return int.from_bytes(hashlib.sha256(secret + b"\0" + task.encode()).digest()[:8], "big")


def fingerprint(secret: bytes) -> str:
    """A short, one-way name for the secret, safe to print and to store with grades."""
    return hashlib.sha256(b"attention-lab fingerprint\0" + secret).hexdigest()[:12]


def public_inputs(task: str) -> set[str]:
    """Every input of the task's public splits: a hidden set holds none of them."""
    dataset = tasks.get(task).dataset
    return {
        row[dataset.input_column]
        for split in dataset.sizes
        for row in read_csv(dataset.path / f"{split}.csv")
    }


def target_columns(task: str) -> tuple[str, ...]:
    return ("id", "target", *tasks.get(task).hidden_columns)


def takes_words(task: str) -> bool:
    """Whether ``task``'s hidden set has an unseen stratum that an instructor's word list can supply."""
    return "words" in inspect.signature(tasks.get(task).hidden_rows.resolve()).parameters


def make_hidden_set(
    task: str, secret_file: str | Path, out: str | Path, n: int | None = None, words: str | Path | None = None
) -> dict:
    """Write a hidden set for ``task`` into ``out`` (a new or empty folder); returns its manifest.

    ``words``: a private word list for the unseen stratum (tasks for which :func:`takes_words`).
    Every check runs before anything is written: on an error, ``out`` is left as it was.
    """
    record = tasks.get(task)
    secret_path = Path(secret_file)
    if not secret_path.is_file():
        raise InputError(
            f"no secret file at {str(secret_path)!r}; write a private random text into one, e.g. "
            '`python -c "import secrets; print(secrets.token_hex(32))" > secret.txt`'
        )
    secret = secret_path.read_bytes().strip()
    if len(secret) < 16:
        raise InputError(f"{str(secret_path)!r} holds {len(secret)} bytes; use at least 16 random characters")
    n = record.hidden_size if n is None else n
    if not 1 <= n <= 100_000:
        raise InputError(f"--n must be between 1 and 100,000, got {n}")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"--out {str(out)!r} exists and is not an empty folder")
    if words is not None and not takes_words(task):
        raise InputError(
            f"--words gives the unseen stratum its words, and {task}'s hidden set has none; it is "
            f"for: {', '.join(t.name for t in tasks.all_tasks() if takes_words(t.name))}"
        )
    options = {} if words is None else {"words": Path(words)}  # the task reads and checks the list
    rows = record.hidden_rows(n, seed_from_secret(secret, task), public_inputs(task), **options)
    if len(rows) < n:
        raise InputError(f"could only draw {len(rows):,} hidden rows for {task}; ask for fewer")
    for index, row in enumerate(rows):
        row["id"] = f"h{index:06d}"
    with folder_written_whole(out) as folder:
        write_csv(
            folder / "inputs.csv", ("id", "source"), [{"id": r["id"], "source": r["source"]} for r in rows]
        )
        columns = target_columns(task)
        write_csv(folder / "targets.csv", columns, [{c: r[c] for c in columns} for r in rows])
        manifest = {
            "format": "attention-lab-hidden-set",
            "version": 1,
            "task": task,
            "size": len(rows),
            "secret_fingerprint": fingerprint(secret),
            "sha256": {
                name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
                for name in ("inputs.csv", "targets.csv")
            },
        }
        if words is not None:
            manifest["private_words_sha256"] = hashlib.sha256(Path(words).read_bytes()).hexdigest()
        write_json(folder / "manifest.json", manifest)
        for path in folder.iterdir():
            os.chmod(path, 0o600)
    os.chmod(out, 0o700)
    return manifest


def load_hidden_set(folder: str | Path, task: str) -> tuple[list[dict], list[dict], dict]:
    """``(inputs, targets, manifest)`` of a hidden-set folder, checked against its manifest.

    Each target row also gets its input's ``source`` (the scorer reports by name length); this
    joined list stays in the grader and never goes to the sandbox.
    """
    folder = Path(folder)
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError(
            f"{str(folder)!r} is not a hidden set (no readable manifest.json); make one with "
            f"`python -m autograder hidden-set --task {task} ...`"
        ) from None
    if manifest.get("task") != task:
        raise InputError(f"{str(folder)!r} is a hidden set for {manifest.get('task')!r}, not {task!r}")
    for name, digest in manifest.get("sha256", {}).items():
        if hashlib.sha256((folder / name).read_bytes()).hexdigest() != digest:
            raise InputError(f"{folder / name} has changed since the hidden set was made; make it again")
    inputs, targets = read_csv(folder / "inputs.csv"), read_csv(folder / "targets.csv")
    if [r["id"] for r in inputs] != [r["id"] for r in targets]:
        raise InputError(f"{str(folder)!r}: inputs.csv and targets.csv do not list the same ids")
    return inputs, [{**t, "source": i["source"]} for i, t in zip(inputs, targets)], manifest


SKIPPED_FOLDERS = {
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "node_modules",
    ".ipynb_checkpoints",
    ".pytest_cache",
}
MAX_SECRET_BYTES = 4_000_000  # a secret or word list larger than this is not looked for by its hash


def secrets_inside(folder: Path, manifest: dict, recursive: bool = True) -> list[tuple[Path, str]]:
    """What of the instructor's grading files lies inside ``folder`` (the kit's): ``(path, what)`` for every
    hidden set (a ``manifest.json`` of one, any task's), the secret file that ``manifest``'s hidden set was
    drawn from (found by its fingerprint), its private word list and a copy of a hidden set's files, wherever
    it lies and whatever it is called (by their SHA-256s). Links are not followed, and the kit's environments
    and git folder are not looked into; ``recursive=False`` looks at ``folder``'s own files.

    Student code runs with the kit's folder on its path; the sandboxes hide what they can, but a file
    that is not in the kit cannot be read from it by any mistake of theirs.
    """
    found, fingerprints, word_lists, files = (
        [],
        {manifest.get("secret_fingerprint")} - {None},
        {manifest.get("private_words_sha256")} - {None},
        [],
    )
    copies = {digest: name for name, digest in manifest.get("sha256", {}).items()}  # inputs.csv, targets.csv
    for here, folders, names in os.walk(folder):
        folders[:] = sorted(f for f in folders if f not in SKIPPED_FOLDERS) if recursive else []
        files += [Path(here) / name for name in sorted(names)]
        if "manifest.json" in names:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                data = json.loads((Path(here) / "manifest.json").read_text(encoding="utf-8"))
                if data.get("format") == "attention-lab-hidden-set":
                    found.append((Path(here), "a hidden set"))
                    fingerprints.add(data.get("secret_fingerprint"))
                    copies.update({digest: name for name, digest in data.get("sha256", {}).items()})
    for path in files:
        with contextlib.suppress(OSError):
            if not path.is_symlink() and path.is_file() and 0 < path.stat().st_size <= MAX_SECRET_BYTES:
                data = path.read_bytes()
                digest = hashlib.sha256(data).hexdigest()
                if digest in copies and path.parent not in {p for p, what in found if what == "a hidden set"}:
                    found.append((path, f"a copy of a hidden set's {copies[digest]}"))
                elif fingerprint(data.strip()) in fingerprints:
                    found.append((path, "the secret hidden sets are drawn from"))
                elif digest in word_lists:
                    found.append((path, "the hidden set's private word list"))
    return found
