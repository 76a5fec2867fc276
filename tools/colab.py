"""Open-in-Colab links for the kit's notebooks, once the course hosts the kit on GitHub.

    python -m labs colab-links --repo course-org/attention-lab [--branch main]
    python -m labs release homework --out release/ --colab-repo course-org/attention-lab-student

Colab opens a notebook straight from a public GitHub repository, at
``https://colab.research.google.com/github/OWNER/NAME/blob/BRANCH/PATH``, but it opens the
notebook alone, without the kit that the notebook imports. So two things are written:

- each notebook's setup cell gets the repository (``KIT_REPOSITORY, KIT_BRANCH = ...``, in the
  notebook's source; :mod:`tools.notebooks` builds the rest of the cell): run in Colab without
  the kit around it, that cell clones the kit and installs its requirements before importing
  anything;
- the README's notebook table (between ``<!-- colab:start -->`` and ``<!-- colab:end -->``)
  gets an "Open in Colab" badge per notebook.

Without a repository the table says how to add the links, and the cell only looks for the kit
around the notebook, as it does on a laptop.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from labs.common.errors import InputError
from labs.common.files import write_text
from tools.notebooks import REPOSITORY_LINE, build

# The notebooks, in the README's order, with what each shows.
NOTEBOOKS = {
    "demos/demo1_date_generation.ipynb": "teacher forcing, training curves against the entropy bound, "
    "sampling at several temperatures, lab 1's metrics",
    "demos/demo2_date_translation.ipynb": "the attention model and its baseline, exact match per format and "
    "locale, the bottleneck at 16 units, "
    "heatmaps, an attention explorer on the Buddhist-era year, beam search step by step",
    "demos/demo3_attention_variants.ipynb": "the lecture's attentions side by side (Bahdanau, Luong's "
    "scores, scaled dot-product, multi-head, a small "
    "Transformer): each score in code, a comparison table, heatmaps per variant and per head, explorers "
    "side by side with a head picker, the cost per step",
    "homework/hw3_1_thai_name_transliteration.ipynb": "the self-test of the student's layer, training, the "
    "NEWS metrics per stratum, heatmaps, the wrong name in the attention explorer and beam search step by "
    "step, the submission",
}
START, END = "<!-- colab:start -->", "<!-- colab:end -->"
BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
_BRANCH = re.compile(r"^[A-Za-z0-9._/-]{1,200}$")


@dataclass(frozen=True)
class Repository:
    """A GitHub repository and branch that hold the kit."""

    name: str  # "owner/name"
    branch: str = "main"

    @property
    def clone_url(self) -> str:
        return f"https://github.com/{self.name}.git"

    def colab_url(self, notebook: str) -> str:
        """The address at which Colab opens ``notebook`` (a path inside the kit) from this repository."""
        return f"https://colab.research.google.com/github/{self.name}/blob/{self.branch}/{notebook}"


def parse_repository(text: str, branch: str = "main") -> Repository:
    """``owner/name`` or ``https://github.com/owner/name[.git]``, checked; InputError otherwise."""
    name = (
        re.sub(r"^(?:https?://)?(?:www\.)?github\.com/", "", text.strip())
        .removesuffix("/")
        .removesuffix(".git")
    )
    if "://" in name or "@" in name or not _NAME.match(name) or ".." in name:
        raise InputError(
            f"--repo {text!r} is not a GitHub repository; give it as OWNER/NAME (for example "
            "course-org/attention-lab). Colab opens notebooks from GitHub only; elsewhere, students "
            "upload the kit instead"
        )
    if not _BRANCH.match(branch) or ".." in branch or branch.startswith(("/", "-")):
        raise InputError(f"--branch {branch!r} is not a branch name")
    return Repository(name, branch)


def set_kit_repository(source: str, repository: Repository | None, where: str = "notebook") -> str:
    """A notebook's jupytext source with its ``KIT_REPOSITORY, KIT_BRANCH = ...`` line set to
    ``repository``."""
    if len(REPOSITORY_LINE.findall(source)) != 1:
        raise InputError(
            f"{where} should have exactly one line starting 'KIT_REPOSITORY, KIT_BRANCH = ' "
            "in its first code cell"
        )
    url, branch = (repository.clone_url, repository.branch) if repository else ("", "")
    line = f"KIT_REPOSITORY, KIT_BRANCH = {json.dumps(url)}, {json.dumps(branch)}"
    return REPOSITORY_LINE.sub(lambda _: line, source)


def read_kit_repository(source: str) -> Repository | None:
    """The repository a notebook's jupytext source names (``None`` when it names none)."""
    match = REPOSITORY_LINE.search(source)
    url, branch = ast.literal_eval(match.group(1)) if match else ("", "")
    return parse_repository(url, branch) if url else None


def notebook_table(repository: Repository | None, students: bool = False) -> str:
    """The README's notebook table, with a Colab badge per notebook when the kit has a home on GitHub.

    ``students``: the table is for the student kit's README, whose readers cannot add the links."""
    lines = ["| notebook | what it shows | Colab |", "|---|---|---|"]
    for path, shows in NOTEBOOKS.items():
        badge = f"[![Open in Colab]({BADGE})]({repository.colab_url(path)})" if repository else "—"
        lines.append(f"| `{path}` | {shows} | {badge} |")
    if repository is None and students:
        lines += [
            "",
            "No Colab badges: the course has not put this kit on GitHub. In Colab, upload the kit instead "
            "(see Set up).",
        ]
    elif repository is None:
        lines += [
            "",
            "The Colab column fills in once the course hosts the kit on GitHub: "
            "`python -m labs colab-links --repo OWNER/NAME` (see below).",
        ]
    else:
        lines += [
            "",
            f"The badges open each notebook from `{repository.name}` (branch `{repository.branch}`); "
            "its first cell fetches the kit and installs what Colab lacks.",
        ]
    return "\n".join(lines)


def readme_with_table(readme: str, repository: Repository | None, students: bool = False) -> str:
    """``readme`` with the block between the Colab markers replaced by :func:`notebook_table`."""
    if readme.count(START) != 1 or readme.count(END) != 1:
        raise InputError(
            f"README.md should hold the markers {START} and {END} once each, around the notebook table"
        )
    table = notebook_table(repository, students)
    return re.sub(
        re.escape(START) + ".*?" + re.escape(END),
        lambda _: f"{START}\n{table}\n{END}",
        readme,
        flags=re.DOTALL,
    )


def write_colab_links(root: Path, repository: Repository | None, log=print) -> list[Path]:
    """Point the kit's notebooks and README under ``root`` at ``repository`` (``None`` removes the links).

    Everything is computed before the first write, so a kit with a broken notebook is left as it was. Returns
    the files written."""
    changes = {}
    for notebook in NOTEBOOKS:
        source = (root / notebook).with_suffix(".py")
        if not source.is_file():
            raise InputError(f"{source} is missing; run this from a complete kit")
        text = set_kit_repository(source.read_text(encoding="utf-8"), repository, where=str(source))
        changes[source] = text
        changes[root / notebook] = build(text, root / notebook)
    readme = root / "README.md"
    if readme.is_file():
        changes[readme] = readme_with_table(readme.read_text(encoding="utf-8"), repository)
    for path, text in changes.items():
        write_text(path, text)
    if repository:
        log(
            f"Colab links point at {repository.name} (branch {repository.branch}); push the kit there, then "
            f"open {repository.colab_url(next(iter(NOTEBOOKS)))}"
        )
    else:
        log("Colab links removed")
    return list(changes)
