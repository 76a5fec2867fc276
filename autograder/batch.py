"""Grade a folder of submissions in one go, and check one bundle the way students do before handing in."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from autograder.grade import (HiddenSet, bundle_digest, cached_result, find_bundle, grade_bundle, missing_bundle,
                              public_examples, student_id_for)
from autograder.hidden import load_hidden_set
from autograder.reports import write_gradebook, write_student_files
from autograder.rubric import Rubric
from labs.common.errors import InputError
from labs.common.files import read_csv
from labs.common.paths import DATASETS_DIR


def _entries(submissions: Path) -> list[Path]:
    """One entry per student: each zip or folder directly inside ``submissions`` (hidden files skipped)."""
    if not submissions.is_dir():
        raise InputError(f"{str(submissions)!r} is not a folder of submissions")
    entries = [p for p in sorted(submissions.iterdir()) if not p.name.startswith(".")
               and (p.is_dir() or p.suffix.lower() == ".zip" or p.is_symlink())]
    if not entries:
        raise InputError(f"{str(submissions)!r} holds no submissions (zips or folders)")
    return entries


def _unique_ids(entries: list[Path]) -> dict[Path, str]:
    ids, taken = {}, set()
    for entry in entries:
        base = student_id_for(entry)
        name, k = base, 2
        while name in taken:
            name, k = f"{base}-{k}", k + 1
        taken.add(name)
        ids[entry] = name
    return ids


def grade_folder(submissions: str | Path, rubric: Rubric, hidden_dir: str | Path, out: str | Path, *,
                 jobs: int = 1, force: bool = False, progress: bool = True) -> list[dict]:
    """Grade every entry of ``submissions``; write results, feedback, gradebook and leaderboard into ``out``.

    A bundle already graded with the same bundle, hidden set and rubric is skipped (its result
    is reused) unless ``force``. One bad bundle never stops the batch.
    """
    from tqdm.auto import tqdm

    if jobs < 1:
        raise InputError(f"--jobs must be 1 or more, got {jobs}")
    submissions, out = Path(submissions), Path(out)
    inputs, targets, manifest = load_hidden_set(hidden_dir, rubric.task)
    hidden = HiddenSet(Path(hidden_dir), inputs, targets, manifest)
    entries = _entries(submissions)
    ids = _unique_ids(entries)
    for folder in ("results", "feedback"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    rubric_digest = hashlib.sha256(Path(rubric.path).read_bytes()).hexdigest()
    examples = public_examples(rubric.task)
    hide = [Path(hidden_dir), submissions, out]
    records, todo = [], []
    for entry in entries:
        bundle = find_bundle(entry)
        previous = None if force or bundle is None else \
            cached_result(out / "results", ids[entry], bundle_digest(bundle), hidden, rubric_digest)
        if previous is not None:
            records.append(previous)
        else:
            todo.append((entry, bundle))

    def work(entry: Path, bundle: Path | None) -> dict:
        if bundle is None:
            record = missing_bundle(entry.name, rubric, hidden, "the submission folder is empty")
        else:
            record = grade_bundle(bundle, rubric, hidden, examples=examples, hide=hide)
        record.update(student=ids[entry], rubric_sha256=rubric_digest)
        return record

    with ThreadPoolExecutor(max_workers=jobs) as pool, \
            tqdm(total=len(entries), initial=len(records), desc=f"grading {rubric.task}", unit="bundle",
                 disable=not progress) as bar:
        futures = [pool.submit(work, entry, bundle) for entry, bundle in todo]
        for future in as_completed(futures):
            record = future.result()
            write_student_files(record, rubric, out)   # here, in one thread: matplotlib is not thread-safe
            records.append(record)
            bar.update(1)
    write_gradebook(records, rubric, out)
    return records


def dev_set(task: str) -> HiddenSet:
    """The public dev split as a "hidden" set: what ``check`` scores a bundle on."""
    folder = {"date-generation": "iso-dates", "date-translation": "date-pairs",
              "name-transliteration": "thai-names"}[task]
    rows = read_csv(DATASETS_DIR / folder / "dev.csv")
    if task == "date-generation":
        rows = [{"source": r["date"], "target": r["date"]} for r in rows]
    ids = [{"id": f"d{i:06d}", **row} for i, row in enumerate(rows)]
    return HiddenSet(DATASETS_DIR / folder, [{"id": r["id"], "source": r["source"]} for r in ids], ids,
                     {"task": task, "size": len(ids), "sha256": {}, "secret_fingerprint": "public-dev"})


def check_bundle(path: str | Path, rubric: Rubric, *, limit: int | None = 1000) -> dict:
    """Validate one bundle and score it on (the first ``limit`` rows of) the public dev set."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"no bundle at {str(path)!r}")
    hidden = dev_set(rubric.task)
    if limit is not None:
        hidden = HiddenSet(hidden.folder, hidden.inputs[:limit], hidden.targets[:limit], hidden.manifest)
    return grade_bundle(path, rubric, hidden)
