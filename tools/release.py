"""Write the student version of the kit: every solution block replaced by a TODO that raises.

    python -m labs release homework --out release/

In the instructor's kit, a solution is written between markers, with the TODO and a hint
(shown here after a ``|``, which the real lines do not have):

    | ### BEGIN SOLUTION
    | ### TODO: compute the context (batch, T, value_dim) from the weights and the values
    | ### HINT: a batched matrix product: (batch, T, S) x (batch, S, value_dim)
    | context = ops.matmul(weights, values)
    | ### END SOLUTION

and the student version reads:

    | # TODO: compute the context (batch, T, value_dim) from the weights and the values
    | # Hint: a batched matrix product: (batch, T, S) x (batch, S, value_dim)
    | raise NotImplementedError("TODO: compute the context ... (homework/kv_attention.py)")

Before anything is written, the release checks that no marker and no line of any solution
is left in any released file.

The release copies what students need (``labs/``, ``homework/``, ``demos/``, ``datasets/``,
``autograder/``, ``requirements.txt``) and never the instructor's tests, their requirements
(``requirements-dev.txt``), the kit's tooling (``tools/``: the demo, this release), trained models,
run folders or secret seeds. The student kit gets its
own README.md, Makefile and homework/README.md, written for students (setup, self-test, train,
export, check, hand in; what the grade measures): their sources are the files under
``homework/student_kit/``, each put at the same path in the student kit, and that folder itself is
not released. The README's notebook table is filled in (with Colab badges when the kit has a
repository). A task may keep more out of the student kit (its
``student_kit`` in the task registry): the homework's name table loses the grader's hidden words,
so that the hidden set's unseen names are spelled in no file a student has; the release checks
that no released file names one. Notebooks whose source held a solution
are regenerated from the stripped source. The output folder is written whole or not at all.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from labs import tasks
from labs.common.errors import InputError
from labs.common.files import folder_written_whole, write_text
from labs.common.paths import REPO_ROOT
from tools.colab import Repository, readme_with_table, write_colab_links
from tools.notebooks import build

# The kit's tooling (tools/: demo, release, notebooks, colab-links) is the instructor's and stays out.
INCLUDED = ("requirements.txt", ".gitignore", "labs", "homework", "demos", "datasets", "autograder")
# The student kit's own README.md, Makefile, .gitignore and homework/README.md: each file under this folder
# takes the place of the instructor's file at the same path in the student kit.
STUDENT_FILES = Path("homework/student_kit")
# Never released, wherever they sit: folders of runs, hidden sets and caches; trained weights, secrets and
# hidden targets.
EXCLUDED_FOLDERS = ("runs", "hidden*", "__pycache__", ".ipynb_checkpoints", ".pytest_cache")
EXCLUDED_FILES = (
    "*.keras",
    "*.h5",
    "*.weights.*",
    "*.npz",
    "*.ckpt*",
    "*secret*",
    "*.seed",
    "targets.csv",
    "*.pyc",
)
BEGIN, END, TODO, HINT = "### BEGIN SOLUTION", "### END SOLUTION", "### TODO:", "### HINT:"
_MARKER = re.compile(r"^(\s*)(### (?:BEGIN SOLUTION|END SOLUTION|TODO:|HINT:))(.*)$")


@dataclass
class Released:
    out: Path
    files: int
    stripped: dict[str, int]  # file (relative) -> solution blocks replaced


@dataclass
class Stripped:
    text: str
    blocks: int  # solution blocks replaced
    solution: list[str]  # the solution's code lines, stripped of indentation (for the leak check)


def strip_solutions(text: str, where: str) -> Stripped:
    """``text`` with each solution block replaced by its TODO, its hint and a raise.

    ``where`` (the file's path in the kit) names the file in errors and in the raised message."""
    out, block, blocks, solution = [], None, 0, []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        match = _MARKER.match(line)
        marker = match.group(2) if match else None
        if block is None:
            if marker == BEGIN:
                block = {"indent": match.group(1), "line": number, "todo": None, "hint": None}
            elif marker is not None:
                raise InputError(f"{where}:{number}: {marker!r} outside a solution block")
            else:
                out.append(line)
            continue
        if marker == TODO:
            block["todo"] = match.group(3).strip()
        elif marker == HINT:
            block["hint"] = match.group(3).strip()
        elif marker is None:
            if len(line.strip()) >= 20:  # shorter lines (``else:``) say nothing about the solution
                solution.append(line.strip())
        elif marker == BEGIN:
            raise InputError(
                f"{where}:{number}: a solution block starts inside the block opened at line {block['line']}"
            )
        elif marker == END:
            if not block["todo"]:
                raise InputError(f"{where}:{block['line']}: this solution block has no '{TODO} ...' line")
            indent, todo = block["indent"], block["todo"]
            out.append(f"{indent}# TODO: {todo}\n")
            if block["hint"]:
                out.append(f"{indent}# Hint: {block['hint']}\n")
            out.append(f"{indent}raise NotImplementedError({f'TODO: {todo} ({where})'!r})\n")
            block, blocks = None, blocks + 1
    if block is not None:
        raise InputError(f"{where}:{block['line']}: this solution block is never closed with {END!r}")
    return Stripped("".join(out), blocks, solution)


_THAI_WORD = re.compile(r"[\u0e00-\u0e7f]+")


def _leaks(folder: Path, solution: set[str], withheld_words: set[str]) -> list[str]:
    """Released files that still hold a marker line, a line of a solution or one of the withheld words."""
    marker = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$", re.MULTILINE)
    leaks = []
    for path in sorted(
        p for p in folder.rglob("*") if p.suffix in (".py", ".ipynb", ".md", ".txt", ".json", ".csv")
    ):
        text = path.read_text(encoding="utf-8", errors="replace")
        if (
            marker.search(text)
            or any(line in text for line in solution)
            or not withheld_words.isdisjoint(_THAI_WORD.findall(text))
        ):
            leaks.append(path.relative_to(folder).as_posix())
    return leaks


def _excluded(path: Path) -> bool:
    """Whether a kit file (``path`` relative to the kit) stays out of the release."""
    return any(
        fnmatch.fnmatch(part, pattern) for part in path.parts[:-1] for pattern in EXCLUDED_FOLDERS
    ) or any(fnmatch.fnmatch(path.name, pattern) for pattern in EXCLUDED_FILES)


def _files(root: Path) -> list[Path]:
    """The kit's files to release, relative to ``root`` (the student kit's own files not among them)."""
    files = []
    for name in INCLUDED:
        entry = root / name
        candidates = [entry] if entry.is_file() else sorted(p for p in entry.rglob("*") if p.is_file())
        files += [
            p.relative_to(root)
            for p in candidates
            if not _excluded(p.relative_to(root))
            and not p.is_symlink()
            and STUDENT_FILES not in p.relative_to(root).parents
        ]
    return files


def _student_files(root: Path) -> dict[Path, Path]:
    """The student kit's own files: where each goes in the student kit (relative) -> its source."""
    folder = root / STUDENT_FILES
    sources = sorted(p for p in folder.rglob("*") if p.is_file() and not _excluded(p.relative_to(folder)))
    placed = {p.relative_to(folder): p for p in sources}
    missing = [name for name in ("README.md", "Makefile") if Path(name) not in placed]
    if missing:
        raise InputError(
            f"{STUDENT_FILES.as_posix()}/ lacks {', '.join(missing)}: the student kit's own README.md "
            "and Makefile are written from there"
        )
    return placed


def _check_out_folder(out: Path, root: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(
            f"--out {str(out)!r} exists and is not an empty folder; give a new folder for the release"
        )
    if (
        out.resolve() == root.resolve()
        or root.resolve() in out.resolve().parents
        and out.resolve().relative_to(root.resolve()).parts[0] in INCLUDED
    ):
        raise InputError(f"--out {str(out)!r} is inside a folder being released; choose a folder elsewhere")


def release_homework(
    out: str | Path, root: Path = REPO_ROOT, log=print, colab: Repository | None = None
) -> Released:
    """Write the student kit into ``out`` (a new or empty folder).

    With ``colab`` (the GitHub repository the kit will be pushed to), its README and notebooks get
    Open-in-Colab links to it."""
    out = Path(out)
    _check_out_folder(out, root)
    with folder_written_whole(out) as scratch:
        stripped, solution, files, own = {}, set(), _files(root), _student_files(root)
        files = [f for f in files if f not in own]
        for relative in files:
            source, target = root / relative, scratch / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            if relative.suffix == ".py":
                result = strip_solutions(source.read_text(encoding="utf-8"), relative.as_posix())
                target.write_text(result.text, encoding="utf-8")
                if result.blocks:
                    stripped[relative.as_posix()] = result.blocks
                    solution.update(result.solution)
            else:
                shutil.copyfile(source, target)
        for relative, source in own.items():  # the student kit's README.md, Makefile, .gitignore, ...
            (scratch / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, scratch / relative)
        readme = scratch / "README.md"
        write_text(readme, readme_with_table(readme.read_text(encoding="utf-8"), colab, students=True))
        files += list(own)
        withheld = set()  # what a task keeps out of the student kit (the homework's hidden words)
        for task in tasks.all_tasks():
            if task.student_kit is not None:
                withheld |= task.student_kit(root, scratch)
        for name in stripped:  # a notebook whose source held a solution is rebuilt from the stripped source
            notebook = (scratch / name).with_suffix(".ipynb")
            if notebook.is_file():
                notebook.write_text(
                    build((scratch / name).read_text(encoding="utf-8"), notebook), encoding="utf-8"
                )
        if colab is not None:
            write_colab_links(scratch, colab, log=lambda _: None)
        leaks = _leaks(scratch, solution, withheld)
        if leaks:
            raise InputError(f"a solution would leak through {', '.join(leaks)}; the release was not written")
    for name, blocks in stripped.items():
        log(f"  {name}: {blocks} solution block(s) replaced by TODOs")
    if withheld:
        log(f"  {len(withheld):,} hidden words left out of the name table (the grader's unseen names)")
    if colab is not None:
        log(f"  Colab links point at {colab.name} (branch {colab.branch}): push the kit there")
    log(
        f"Wrote the student kit ({len(files):,} files) to {out}. Check it: cd {out} && python -m labs "
        f"selftest homework "
        "(the checks fail until the TODOs are done)"
    )
    return Released(out, len(files), stripped)
