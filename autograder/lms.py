"""Submissions as the course's LMS hands them over, and grades back in the form it takes in.

``grade`` takes what the instructor downloaded, the zip itself or its unpacked folder:

- **Canvas** ("Download Submissions"): one file per upload, named
  ``sortablename[_LATE]_userid_attachmentid_filename`` (``lib/content_zipper.rb``: the sortable name
  lower-cased with every non-word character removed, ``LATE`` when Canvas counts it late, the
  Canvas user id, the attachment id, the file's own name); anonymous grading writes ``anon_<id>``
  for the name and the user id.
- **Moodle** ("Download all submissions"): ``Full Name_12345_assignsubmission_file`` as a folder
  (the default since Moodle 3.1; older versions end it with ``_``) or as the prefix of each file
  (``..._assignsubmission_file_hw.zip``); 12345 is the participant id, which the offline grading
  worksheet calls ``Participant 12345``; blind marking writes ``Participant`` for the name.
- **Gradescope** ("Export Submissions"): a folder per submission (``submission_123``) beside
  ``submission_metadata.yml``, which names its submitters.
- **folder**: the kit's own layout, one zip or folder per student, named by the student.

Each becomes one :class:`Entry` per student: the LMS's id and name are the row's identity, Canvas's
``LATE`` and a submission time (where the LMS gives one) go to the gradebook. A student with several
files (the download holds the last submission only: they are its parts) has the bundle among them
graded (a zip; the newest where there are more), or their loose bundle files put together into one;
a note names the others. An entry whose name fits no convention is graded under its file stem, with a note.

``export-grades`` writes the grades back: Canvas's gradebook import CSV and Moodle's offline grading
worksheet (:func:`canvas_rows`, :func:`moodle_rows`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import html
import os
import re
import shutil
import stat
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder.claims import clean_message, file_name_text
from autograder.status import GRADED
from labs.common.errors import InputError

LMS_NAMES = ("canvas", "moodle", "gradescope", "folder")

# Canvas (``lib/content_zipper.rb``): an anonymous entry, ``[LATE_]anon_<id>_<attachment id>_<file>``, or a
# named one, ``<name>[_LATE]_<user id>_<attachment id>_<file>``: the name lower-cased (so LATE is Canvas's),
# ids in ASCII digits. Canvas removes `_digits_` from a name once, not for good (`a__1__2` becomes `a_1_2`),
# and a file's name is the student's own: either may hold `_digits_digits_`, so a name may read as more than
# one student (_disputed).
CANVAS = re.compile(r"(?:LATE_)?anon_[A-Za-z0-9]+_\d+_.+|.*_\d+_\d+_.+", re.S | re.ASCII)  # either form
CANVAS_ANONYMOUS = re.compile(
    r"(?P<late>LATE_)?anon_(?P<anon>[A-Za-z0-9]+)_(?P<attachment>\d+)_(?P<file>.+)", re.S | re.ASCII
)
CANVAS_IDS = re.compile(r"(?=_(\d+)_(\d+)_(.+))", re.S | re.ASCII)  # each place the user id may start
# Moodle: full name (its underscores made spaces), participant id, the plugin, then "_file" or the folder.
MOODLE = re.compile(
    r"(?P<name>[^_]*)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)(?:_(?P<file>.*))?",
    re.S | re.ASCII,
)
GRADESCOPE = re.compile(r"submission_(?P<id>\d+)", re.ASCII)
GRADESCOPE_INDEX = "submission_metadata.yml"
# What a download may hold beside the students' entries: the files desktops leave behind.
NOT_SUBMISSIONS = {GRADESCOPE_INDEX, ".DS_Store", "Thumbs.db", "desktop.ini", "__MACOSX"}
MOODLE_BLIND = "Participant"  # the name Moodle writes under blind marking
WORD = ("Nd", "Pc")  # with letters and marks, what Ruby's [[:word:]] keeps (Canvas's file names)


@dataclass
class Entry:
    """One student's submission as the LMS named it.

    ``path``: the file or folder to grade (None where the download held nothing gradable for the
    student: ``problem`` says why). ``id``: the LMS's id (Canvas user id or ``anon_...``, Moodle
    participant id, Gradescope student id), else the file's stem. ``name``: the LMS's name for the
    student, where it gives one. ``late``: Canvas's mark (None where the LMS says nothing).
    ``submitted``: ISO 8601 time, where the LMS gives one. ``notes``: for the instructor.
    """

    path: Path | None
    id: str
    lms: str
    name: str = ""
    late: bool | None = None
    submitted: str = ""
    notes: list[str] = field(default_factory=list)
    problem: str = ""
    order: tuple = ()  # the LMS's own order of one student's files: the highest is the newest
    file: str = ""  # the student's own name for the file (Canvas and Moodle keep it)
    parts: list[Path] = field(default_factory=list)  # the loose files a bundle folder was put together from
    # the students (user and attachment ids) the LMS's name for it reads as, where it reads as more than one:
    # graded apart, and left out of export-grades with every student it may be (lms._disputed)
    readings: list[dict] = field(default_factory=list)

    def identity(self) -> dict:
        """What the record keeps of the LMS (the gradebook's columns, export-grades' rows)."""
        return {
            "lms": self.lms,
            "lms_id": self.id if self.lms != "folder" else "",
            "name": self.name,
            "late": self.late,
            "submitted": self.submitted,
            **({"readings": self.readings} if self.readings else {}),
        }


# --- reading a download ------------------------------------------------------------------------------


def unpack_download(archive: Path, into: Path, max_member_bytes: int) -> Path:
    """The LMS's zip, unpacked into the new folder ``into`` (one level: the students' own zips stay zips).

    Trusts nothing in it: a member that is a link, has an absolute path or ``..``, a name the file
    system refuses, or more than ``max_member_bytes`` is not written; a file named ``NAME.refused.txt``
    says why in its place, so that its student still gets a row.
    """
    try:
        opened = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as error:
        raise InputError(
            f"{str(archive)!r} is neither a folder of submissions nor a readable zip ({error})"
        ) from None
    into.mkdir(parents=True)
    with opened:
        for info in opened.infolist():
            name = _utf8_name(info).replace("\\", "/")
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if not parts or info.is_dir():
                continue
            why = _refused_member(info, parts, max_member_bytes)
            outside = (
                why is not None and "outside" in why
            )  # its folders are not the download's: keep the name
            target = (
                into.joinpath(*parts)
                if why is None
                else into / _placeholder(parts[-1:] if outside else parts)
            )
            if not target.resolve().is_relative_to(into.resolve()):  # a folder of the download that is a link
                target, why = (
                    into / _placeholder(parts[-1:]),
                    "the download names this file outside its own folder",
                )
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                if why is None:
                    _copy_member(opened, info, target, max_member_bytes)
                else:
                    target.write_text(why + "\n", encoding="utf-8")
            except (
                OSError,
                ValueError,
                zipfile.BadZipFile,
            ) as error:  # a duplicate, a file where a folder goes
                fallback = into / _placeholder(parts[-1:])
                if fallback.exists():
                    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
                    fallback = into / _placeholder([f"{parts[-1]}-{digest}"])
                with contextlib.suppress(OSError):
                    fallback.write_text(
                        f"the download's file could not be written: "
                        f"{getattr(error, 'strerror', None) or error}\n",
                        encoding="utf-8",
                    )
    return into


REFUSED = ".refused.txt"
UTF8_FLAG = 0x800


def _utf8_name(info: zipfile.ZipInfo) -> str:
    """A member's name: zips without the UTF-8 flag (rubyzip's default, hence Canvas's) still hold UTF-8 names
    (Thai ones, say), which Python reads as cp437; read them back as UTF-8 where they are that."""
    if info.flag_bits & UTF8_FLAG:
        return info.filename
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return info.filename


def _placeholder(parts: list[str]) -> str:
    """Where a refused member's note goes: its own path with every part made a plain name (no ``..``)."""
    safe = [re.sub(r"[^\w.\- ]", "_", p)[:120].lstrip(".") or "member" for p in parts if p != ".."]
    return "/".join(safe or ["member"]) + REFUSED


def _refused_member(info: zipfile.ZipInfo, parts: list[str], limit: int) -> str | None:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "the download holds this file as a link, which is not followed"
    if info.filename.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:", info.filename):
        return "the download names this file outside its own folder"
    if any("\0" in p or len(p.encode("utf-8", "surrogateescape")) > 255 for p in parts):
        return "the file's name is one no file system holds"
    if info.file_size > limit:
        return f"the file is {info.file_size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB a bundle may have"
    return None


def _copy_member(opened: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, limit: int) -> None:
    """Copy one member, counting the bytes it really gives (a zip can lie about its sizes)."""
    written = 0
    with (
        opened.open(info) as source,
        open(target, "xb") as handle,
    ):  # "x": a second member of the same name fails
        try:
            while chunk := source.read(1 << 20):
                written += len(chunk)
                if written > limit:
                    raise ValueError(f"over the {limit / 1e6:.0f} MB a bundle may have")
                handle.write(chunk)
        except BaseException:
            target.unlink()  # never half a file
            raise
    stamp = dt.datetime(*info.date_time).timestamp()
    os.utime(target, (stamp, stamp))


def detect(folder: Path) -> str:
    """The LMS whose naming the folder's entries follow (``folder`` where none fits most of them)."""
    names = [_unrefused(p.name) for p in _children(folder)]
    fits = {
        lms: sum(bool(pattern.fullmatch(n)) for n in names)
        for lms, pattern in (("gradescope", GRADESCOPE), ("moodle", MOODLE), ("canvas", CANVAS))
    }
    best = max(fits, key=lambda lms: fits[lms])  # ties: Gradescope's, Moodle's, then Canvas's names
    return best if fits[best] * 2 > len(names) else "folder"


def _unrefused(name: str) -> str:
    return name[: -len(REFUSED)] if name.endswith(REFUSED) else name


def _children(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.iterdir()) if p.name not in NOT_SUBMISSIONS]


def read_entries(folder: Path, lms: str = "auto", scratch: Path | None = None) -> tuple[str, list[Entry]]:
    """The LMS (``lms``, or the one :func:`detect` finds) and one :class:`Entry` per student of ``folder``
    (:func:`_one_per_student`; loose bundle files are put together under ``scratch``, when given)."""
    if lms == "auto":
        lms = detect(folder)
    reader = {"canvas": _canvas, "moodle": _moodle, "gradescope": _gradescope, "folder": _folder}[lms]
    return lms, _one_per_student(reader(folder), scratch)


def _unnamed(path: Path, lms: str) -> Entry:
    """An entry whose name fits no convention of ``lms``: graded under its file stem, with a note, as an entry
    of no LMS (a ``12345.zip`` is no Canvas user 12345's)."""
    from autograder.grade import student_id_for

    entry = _plain(path, student_id_for(path))
    entry.notes.append(
        f"the name {path.name[:80]!r} follows no {lms.title()} convention: graded under its file name"
    )
    return entry


def _plain(path: Path, student: str) -> Entry:
    """An entry for ``path``; a note the download left in place of a refused file (``NAME.refused.txt``) makes
    an entry with its ``problem``, which gets its row and is never opened as a bundle."""
    if path.name.endswith(REFUSED):
        return Entry(path, student, "folder", problem=_read_problem(path))
    return Entry(path, student, "folder")


def _read_problem(path: Path) -> str:
    """What a ``NAME.refused.txt`` says, as one line of plain text (a student can upload such a file too)."""
    try:
        said = clean_message(path.read_text(encoding="utf-8", errors="replace"), 300)
    except OSError:
        said = ""
    return said or "the download's file could not be written"


def _folder(folder: Path) -> list[Entry]:
    from autograder.grade import student_id_for

    return [_plain(path, student_id_for(Path(_unrefused(path.name)))) for path in _children(folder)]


def _named(folder: Path, pattern: re.Pattern, lms: str, entries: list[Entry]):
    """Each entry of ``folder`` whose name fits ``pattern``, with its match; the others go to ``entries``,
    graded under their file names with a note (:func:`_unnamed`)."""
    for path in _children(folder):
        match = pattern.fullmatch(file_name_text(_unrefused(path.name)))
        if match is None:
            entries.append(_unnamed(path, lms))
        else:
            yield path, match


def _canvas(folder: Path) -> list[Entry]:
    entries = []
    found = list(_named(folder, CANVAS, "canvas", entries))
    anonymous = _anonymous_download([match.string for _, match in found])
    for path, match in found:
        text = match.string
        readings = [] if anonymous and CANVAS_ANONYMOUS.fullmatch(text) else list(CANVAS_IDS.finditer(text))
        if not readings:  # anonymous
            anon = CANVAS_ANONYMOUS.fullmatch(text)
            entry = _plain(path, f"anon_{anon['anon']}")
            entry.late, attachment, entry.file = bool(anon["late"]), anon["attachment"], anon["file"]
        else:  # read as Canvas reads it, at the first place a user id may start
            before = [text[: r.start()] for r in readings]  # the name (and LATE) each reading leaves
            names = [name.removesuffix("_LATE") for name in before]
            entry = _plain(path, readings[0][1])
            entry.name, attachment, entry.file = names[0], readings[0][2], readings[0][3]
            # Canvas's LATE, before any of the places: a student can add one (to their file), never hide it
            entry.late = any(name.endswith("_LATE") for name in before)
        entry.lms, entry.order = "canvas", (int(attachment),)
        if len(readings) > 1:
            _disputed(entry, [{"name": n, "user": r[1], "attachment": r[2]} for n, r in zip(names, readings)])
        entries.append(entry)
    return entries


def _anonymous_download(names: list[str]) -> bool:
    """Whether Canvas's download is of an anonymously graded assignment (it is all one or all the other): some
    name reads only as anonymous, or every one reads so. A student whose name is ``anon`` is not one."""
    anonymous = [bool(CANVAS_ANONYMOUS.fullmatch(n)) for n in names]
    only = [a and not CANVAS_IDS.search(n) for a, n in zip(anonymous, names)]
    return any(only) or (bool(names) and all(anonymous))


def _disputed(entry: Entry, readings: list[dict]) -> None:
    """An entry whose Canvas name reads as more than one student (``readings``, Canvas's own first): a student
    who can edit their name makes ``mallory_12345_99_111_20849_hw.zip``, read as Canvas reads it student
    12345's file, though user 111 handed it in; a file named ``6512345678_hw3.zip`` reads two ways too. It
    gets an id no LMS gives, so that it is never taken for one of those students; export-grades leaves it
    out, and every student it may be, unless the course's roster settles whose it is (:func:`canvas_rows`)."""
    digest = hashlib.sha256(f"{entry.id}/{entry.file}/{readings}".encode("utf-8")).hexdigest()[:8]
    entry.id, entry.readings = f"ambiguous-{digest}", readings
    said = " or as ".join(f"user {r['user']} (attachment {r['attachment']})" for r in readings)
    entry.notes.append(
        f"Canvas's name for this file reads as {said}: a name or a file name with _digits_digits_ in it. It "
        "is graded apart; export-grades leaves out both it and every student it may be, unless the course's "
        "gradebook export (--roster) settles whose it is: else check in Canvas, and enter the grades by hand"
    )


def _moodle(folder: Path) -> list[Entry]:
    entries = []
    for path, match in _named(folder, MOODLE, "moodle", entries):
        name = "" if match["name"] == MOODLE_BLIND else match["name"]
        if _is_folder(path) and not match["file"]:
            files = _children(path)
            if not os.path.lexists(path / "meta.json") and files:  # the student's files in Moodle's folder
                for file in files:
                    entries.append(_moodle_entry(file, match, name))
                continue
        entries.append(_moodle_entry(path, match, name))
    return entries


def _is_folder(path: Path) -> bool:
    """A folder itself, not a link to one."""
    with contextlib.suppress(OSError):
        return stat.S_ISDIR(os.lstat(path).st_mode)
    return False


def _moodle_entry(path: Path, match: re.Match, name: str) -> Entry:
    entry = _plain(path, match["participant"])
    entry.lms, entry.name, entry.file = "moodle", name, match["file"] or file_name_text(_unrefused(path.name))
    if match["plugin"] != "file":
        entry.problem = entry.problem or f"Moodle's {match['plugin']} submission, not a file"
    with contextlib.suppress(OSError):
        entry.order = (match["plugin"] == "file", path.stat().st_mtime, path.name)
    return entry


def _gradescope(folder: Path) -> list[Entry]:
    submitters = _gradescope_index(folder / GRADESCOPE_INDEX)
    entries = []
    for path, match in _named(folder, GRADESCOPE, "gradescope", entries):
        who = submitters.get(path.name, {})
        entry = _plain(path, who.get("sid") or who.get("email") or path.name)
        when = parse_time(who.get("created_at", ""))
        entry.lms, entry.name = "gradescope", who.get("name", "")
        entry.submitted = when.isoformat() if when else ""
        entry.order = (entry.submitted, int(match["id"]))
        entries.append(entry)
    return entries


def _gradescope_index(path: Path) -> dict[str, dict[str, str]]:
    """``submission_metadata.yml``'s first submitter of each submission (name, sid, email) and its time.

    Read line by line for the keys we need (the file is Ruby's YAML, with ``:symbol:`` keys), so no
    YAML library is needed and nothing in it is evaluated. A value written over several lines (a name with a
    line break in it, a long one folded) is a name, never keys: a line indented past its key's column
    continues that key's value, and a name written as a block (``|-``) is read as none.
    """
    index: dict[str, dict[str, str]] = {}
    try:
        # lines end where YAML's do (not at a form feed, NEL or U+2028, as splitlines() would end them)
        lines = [line.rstrip("\r") for line in path.read_text(encoding="utf-8", errors="replace").split("\n")]
    except OSError:
        return index
    current, within = None, -1  # the submission read; a value's lines are those indented past its key
    for line in lines:
        indent = len(line) - len(line.lstrip(" \t"))
        if indent > within >= 0 or not line.strip():  # a value's next line (a name written over several)
            continue
        within = -1
        top = re.fullmatch(r"(submission_\d+):\s*", line, re.ASCII)
        if top:
            current = index.setdefault(top[1], {})
            continue
        key = re.fullmatch(r"(\s*-?\s*):(\w+):\s*(.*?)\s*", line)
        if key is None:
            continue
        if key[3]:
            within = len(key[1])  # the column of the key, which the value's next lines are indented past
        if current is not None and key[2] in ("name", "sid", "email", "created_at") and key[2] not in current:
            current[key[2]] = "" if key[3][:1] in ("|", ">") else key[3].strip("'\"")
    return index


def _one_per_student(entries: list[Entry], scratch: Path | None) -> list[Entry]:
    """One entry per LMS id. A download holds a student's last submission only, so several files of one
    student are parts of it, not attempts: the bundle among them is graded (a zip, the newest where there are
    more), and loose bundle files (``meta.json``, ``model.keras``, ...) are put together into one bundle
    folder under ``scratch``; a note names what was not graded."""
    by_id: dict[tuple[str, str], list[Entry]] = {}
    for entry in entries:
        key = (entry.lms, entry.id) if entry.lms != "folder" and not entry.notes else ("", str(entry.path))
        by_id.setdefault(key, []).append(entry)
    kept = []
    for group in by_id.values():
        if len(group) == 1:
            kept.append(group[0])
            continue
        chosen = _assembled(group, scratch) or max(group, key=_preference)
        left = [e for e in group if e is not chosen and e.path not in chosen.parts]
        if left:
            chosen.notes.append(
                f"{len(group)} files for this student: graded {_shown(chosen)!r}; not graded: "
                + ", ".join(repr(_shown(e)) for e in sorted(left, key=_shown))
            )
        kept.append(chosen)
    return sorted(kept, key=lambda e: (e.id, _shown(e)))


def _preference(entry: Entry) -> tuple:
    """Which of a student's files to grade: a readable one, a zip or bundle folder, then the LMS's newest."""
    bundle_like = entry.path is not None and (entry.path.suffix.lower() == ".zip" or _is_folder(entry.path))
    return entry.problem == "", bundle_like, entry.order


def _assembled(group: list[Entry], scratch: Path | None) -> Entry | None:
    """The student's loose bundle files (at least ``meta.json`` and ``model.keras``) copied into one
    folder."""
    from autograder.bundle import OPTIONAL, REQUIRED

    loose = {
        e.file: e
        for e in sorted(group, key=lambda e: e.order)
        if e.file in REQUIRED + OPTIONAL and not e.problem and _is_file(e.path)
    }
    if scratch is None or not {"meta.json", "model.keras"} <= set(loose):
        return None
    first = group[0]
    folder = scratch / f"{first.lms}-{hashlib.sha256(first.id.encode()).hexdigest()[:12]}" / "loose-files"
    folder.mkdir(parents=True)
    for name, entry in loose.items():
        shutil.copyfile(entry.path, folder / name, follow_symlinks=False)
    entry = Entry(
        folder,
        first.id,
        first.lms,
        name=first.name,
        late=first.late,
        submitted=first.submitted,
        order=first.order,
        file="loose-files",
    )
    entry.parts = [e.path for e in loose.values()]
    entry.notes.append(f"a bundle put together from {len(loose)} loose files: {', '.join(sorted(loose))}")
    return entry


def _is_file(path: Path | None) -> bool:
    with contextlib.suppress(OSError, TypeError):
        return stat.S_ISREG(os.lstat(path).st_mode)
    return False


def _shown(entry: Entry) -> str:
    return file_name_text(_unrefused(entry.path.name)) if entry.path is not None else "?"


# --- lateness -----------------------------------------------------------------------------------------


def apply_late(record: dict, policy) -> None:
    """Take the rubric's late penalty (:class:`autograder.rubric.LatePolicy`, or None) off ``record``'s score,
    where the LMS marks the submission late or its time is after the due date. Keeps ``score_before_late``
    and says what was taken in ``late_penalty`` (``points``, ``rule``); idempotent (a cached record again)."""
    lms = record.get("lms") or {}
    before = record.get("score_before_late", record["score"])
    record["score_before_late"], record["score"], record["late_penalty"] = before, before, None
    days = _days_late(lms.get("submitted", ""), policy.due if policy else None)
    if days is not None and lms.get("late") is None:
        lms["late"] = days > 0  # late by its time, where the LMS set no mark
    late = bool(lms.get("late")) or bool(days)
    if policy is None or not late or record["status"] != GRADED:
        return
    parts = [f"{policy.percent:g} %"] if policy.percent else []
    if policy.per_day_percent and days is not None:
        parts.append(f"{days} day{'' if days == 1 else 's'} x {policy.per_day_percent:g} %")
    percent = policy.percent + policy.per_day_percent * (days or 0)
    rule = " and ".join(parts)
    if percent > policy.max_percent:
        percent, rule = policy.max_percent, f"{rule}, at most {policy.max_percent:g} %"
    rule += f" of {record['max_score']:g}"
    if policy.per_day_percent and days is None:
        rule += "; no daily penalty: the LMS gave no submission time"
    points = round(record["max_score"] * percent / 100, 4)
    record["score"] = max(0.0, round(before - points, 4))
    record["late_penalty"] = {"points": round(before - record["score"], 4), "percent": percent, "rule": rule}


def parse_time(text: str) -> dt.datetime | None:
    """A time with its UTC offset, as LMSs write it (``2026-11-20 10:00:00.000000000 -08:00``, ISO 8601), or
    None where it is missing, malformed or has no offset."""
    match = re.fullmatch(
        r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d)?)(?:\.(\d+))?\s*(Z|[+-]\d\d:?\d\d)", str(text).strip()
    )
    if match is None:
        return None
    offset = (
        "+00:00" if match[4] == "Z" else match[4] if ":" in match[4] else f"{match[4][:3]}:{match[4][3:]}"
    )
    fraction = f".{match[3][:6]:0<6}" if match[3] else ""
    try:
        return dt.datetime.fromisoformat(f"{match[1]}T{match[2]}{fraction}{offset}")
    except ValueError:
        return None


def _days_late(submitted: str, due) -> int | None:
    """Started days between ``due`` and the submission time (0 when on time); None where either is unknown."""
    when = parse_time(submitted)
    if when is None or due is None:
        return None
    seconds = (when - due).total_seconds()
    return 0 if seconds <= 0 else int(-(-seconds // 86400))


# --- grades back ---------------------------------------------------------------------------------------

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_COLUMNS = (
    "Identifier",
    "Full name",
    "Grade",
    "Maximum Grade",
    "Last modified (grade)",
    "Feedback comments",
)


def canvas_rows(
    records: list[dict], assignment: str, roster: dict[str, dict[str, str]] | None = None
) -> tuple[list[str], list[dict], list[str]]:
    """Canvas's gradebook import: the columns, the rows (a "Points Possible" row first) and the students left
    out: no Canvas user id (anonymous, or not from a Canvas download), or one that a file whose name reads as
    more than one student may be (:func:`_disputed`: the grade it got may be theirs).

    ``roster`` (:func:`read_roster`: user id -> the student's columns) settles such a file where one reading
    only has a user of the course (the others read an attachment id or a file's digits as one) and its name
    part is that user's name as Canvas writes it in file names (:func:`canvas_file_name`): it is that
    student's, and their row is exported (where no other file of theirs is graded). A name made to read as a
    classmate's has two users of the course among its readings, the classmate's and its own: it stays left
    out. With a roster, a student it does not list is left out too (Canvas would ask whose the row is), and
    each row takes the roster's columns: the name and the ids Canvas's import preview shows."""
    columns = [*CANVAS_COLUMNS, assignment]
    maximum = max((r["max_score"] for r in records), default=0)
    rows = [{"Student": "Points Possible", assignment: _points(maximum)}]
    owners, disputed = {}, {}  # record -> the user a roster settled; user id -> a file that may be theirs
    for record in records:
        readings = readings_of(record)
        users = {user for user, _ in readings if roster and user in roster}
        if len(users) == 1 and any(
            canvas_file_name(roster[u]["Student"]) == name for u, name in readings if u in users
        ):
            owners[record["student"]] = users.pop()
        else:
            disputed.update((user, record["student"]) for user, _ in readings)
    taken = [owners.get(r["student"], (r.get("lms") or {}).get("lms_id")) for r in records]
    skipped = []
    for record, user in zip(records, taken):
        lms = record.get("lms") or {}
        readings = readings_of(record)
        if readings and record["student"] not in owners:
            read_as = " or ".join(user for user, _ in readings)
            skipped.append(f"{record['student']} ({lms.get('name') or '?'}'s file, read as {read_as})")
        elif lms.get("lms") != "canvas" or not _is_id(user):
            skipped.append(record["student"])
        elif user in disputed:
            skipped.append(f"{record['student']} (a reading of {disputed[user]})")
        elif taken.count(user) > 1:
            skipped.append(f"{record['student']} (user {user} has another graded file)")
        elif roster is not None and user not in roster:  # Canvas would ask at import, one by one
            skipped.append(f"{record['student']} (not in the roster)")
        else:  # the roster's own columns where it is given: the name and ids Canvas's import preview shows
            student = roster[user] if roster is not None else {"Student": lms.get("name", ""), "ID": user}
            rows.append({**student, assignment: _points(record["score"])})
    return columns, [{c: row.get(c, "") for c in columns} for row in rows], skipped


def readings_of(record: dict) -> list[tuple[str, str]]:
    """The (user id, name part) pairs a record's Canvas name reads as, where it reads as more than one
    (:func:`_disputed`); none for any other record."""
    readings = (record.get("lms") or {}).get("readings") or []
    return [(str(r.get("user")), r.get("name")) for r in readings if isinstance(r, dict)]


def canvas_file_name(sortable_name: str) -> str:
    """A student's sortable name (``Doe, Jane``) as Canvas writes it in a download's file names (``doejane``):
    ``_digits_`` removed once (``sanitize_user_name``), lower-cased, then every character that is not a
    letter, a mark, a decimal digit or ``_`` removed (``sanitize_file_name``'s ``[[:word:]]``)."""
    name = re.sub(r"_(\d+)_", r"\1", sortable_name, flags=re.ASCII).lower()
    return "".join(c for c in name if unicodedata.category(c)[0] in "LM" or unicodedata.category(c) in WORD)


ASSIGNMENT_COLUMN = re.compile(r"(?P<title>.*\S) \((?P<id>\d+)\)")
"""An assignment's column in Canvas's gradebook export: ``Homework 3.1 (778)``, its title and its id. Canvas's
import takes a column with an id for that assignment, one without for the assignment of that exact title, and
any other for a new assignment."""
ASSIGNMENT_ID = re.compile(r"\(?(?P<id>\d+)\)?")
"""An assignment's id alone, as ``--assignment`` may give it: ``778`` or ``(778)``."""


def _read_gradebook(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    """Canvas's gradebook export as its header and its rows, every name and cell stripped of the spaces around
    it; InputError for a file that cannot be read."""
    import csv

    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            rows = [
                {(key or "").strip(): value.strip() for key, value in row.items() if isinstance(value, str)}
                for row in reader
            ]
            return [name.strip() for name in reader.fieldnames or []], rows
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputError(f"the roster {str(path)!r} could not be read ({error})") from None


def read_roster(path: str | Path) -> dict[str, dict[str, str]]:
    """Canvas's gradebook export (Grades > Export: ``Student``, ``ID``, ...): each student's user id -> their
    :data:`CANVAS_COLUMNS` (the sortable name, the ids, the section); InputError for a file that is not
    one."""
    header, rows = _read_gradebook(path)
    roster = {}
    for row in rows:
        if _is_id(row.get("ID", "")) and row.get("Student"):
            roster[row["ID"]] = {column: row.get(column, "") for column in CANVAS_COLUMNS}
    if not roster:
        semicolons = len(header) == 1 and ";" in header[0]
        raise InputError(
            f"the roster {str(path)!r} lists no students: give Canvas's gradebook export (Grades > Export), "
            "whose Student and ID columns name each student"
            + (
                "; this one's columns are split by semicolons (a spreadsheet saved it so): give Canvas's "
                "file as it downloads, or save it with commas"
                if semicolons
                else ""
            )
        )
    return roster


def assignment_column(path: str | Path, assignment: str) -> tuple[str | None, float | None, dict[str, str]]:
    """The column of Canvas's gradebook export (``path``) that ``assignment`` names, given as Canvas shows it
    (``Homework 3.1``), with its id (``Homework 3.1 (778)``) or by its id alone, the points the assignment is
    worth there, and the grades it holds (user id -> grade, where there is one); ``(None, None, {})`` for an
    export that lists no assignment. InputError where it names none of the export's assignments (Canvas
    would import its grades as a new assignment) or more than one."""
    import difflib

    header, rows = _read_gradebook(path)
    columns = {c: match for c in header if (match := ASSIGNMENT_COLUMN.fullmatch(c))}
    if not columns:
        return None, None, {}
    wanted = " ".join(assignment.split())
    number = ASSIGNMENT_ID.fullmatch(wanted)
    found = [
        c
        for c, match in columns.items()
        if wanted in (c, " ".join(match["title"].split())) or (number and number["id"] == match["id"])
    ]
    if len(found) != 1:
        listed = ", ".join(repr(c) for c in list(columns)[:12]) + (", ..." if len(columns) > 12 else "")
        if found:
            raise InputError(
                f"the roster {str(path)!r} has {len(found)} assignments titled {assignment!r}: give one with "
                f"its id, as its column says ({', '.join(repr(c) for c in found)})"
            )
        given = ASSIGNMENT_COLUMN.fullmatch(wanted)  # a title with an id: the id may be another's
        same_id = [c for c, match in columns.items() if given and match["id"] == given["id"]]
        titles = [match["title"] for match in columns.values()]
        near = difflib.get_close_matches(wanted, titles, n=1, cutoff=0.6) or [
            t for t in titles if t.casefold().startswith(wanted.casefold())
        ]
        if same_id:
            guess = f"its id {given['id']} is {same_id[0]!r}; "
        else:
            guess = f"did you mean {near[0]!r}? " if near else ""
        raise InputError(
            f"the roster {str(path)!r} has no assignment {assignment!r}, and Canvas would import its grades "
            f"as a new assignment: {guess}its assignments are {listed}"
        )
    possible = next((row for row in rows if "Points Possible" in row.get("Student", "")), {})
    try:
        points = float(possible.get(found[0], ""))
    except ValueError:
        points = None
    grades = {row["ID"]: row[found[0]] for row in rows if _is_id(row.get("ID", "")) and row.get(found[0])}
    return found[0], points, grades


def moodle_rows(
    records: list[dict], title: str, modified: dt.datetime
) -> tuple[list[str], list[dict], list[str]]:
    """Moodle's offline grading worksheet (``Identifier`` = ``Participant N``; the grade, the maximum, when it
    was given, the feedback's summary), and the students left out (not from a Moodle download)."""
    rows, skipped = [], []
    for record in records:
        lms = record.get("lms") or {}
        if lms.get("lms") != "moodle" or not _is_id(lms.get("lms_id")):
            skipped.append(record["student"])
            continue
        rows.append(
            {
                "Identifier": f"Participant {lms['lms_id']}",
                "Full name": lms.get("name", ""),
                "Grade": _points(record["score"]),
                "Maximum Grade": _points(record["max_score"]),
                "Last modified (grade)": modified.strftime("%Y-%m-%d %H:%M:%S %z"),
                # Moodle keeps an imported comment as HTML: the student's text in it, escaped, is text
                "Feedback comments": html.escape(feedback_summary(record, title), quote=False),
            }
        )
    return list(MOODLE_COLUMNS), rows, skipped


def feedback_summary(record: dict, title: str) -> str:
    """A record in one line of plain text: score, status, the late penalty, each rubric line, the message."""
    from autograder.reports import late_text

    parts = [f"{title}: {record['score']:g} / {record['max_score']:g} ({record['status']})"]
    if record.get("late_penalty"):
        parts[0] += late_text(record)
    parts += [
        f"{line['label']}: {line['points']:g} / {line['max_points']:g}"
        + (f" ({line['shown']})" if line.get("shown") else "")
        for line in record.get("lines", [])
    ]
    if record.get("message"):
        parts.append(record["message"])
    return clean_message(". ".join(parts), 1000)


def _is_id(value) -> bool:
    """An LMS's numeric id: ASCII digits only (``𝟏𝟐𝟑`` is digits to Python, and 123 to ``int``)."""
    return isinstance(value, str) and value.isascii() and value.isdigit()


def _points(value: float) -> str:
    return f"{round(float(value), 2):g}"
