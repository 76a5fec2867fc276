"""Notebooks are built from their paired jupytext sources (percent format), never edited by hand.

    python -m labs notebooks        # rebuild every notebook from its .py source

Every notebook's first code cell sets up the kit. Its lines are written once, here (:data:`SETUP`): a
notebook's source holds only the cell's first line, the repository Colab fetches the kit from
(``KIT_REPOSITORY, KIT_BRANCH = ...``, which ``colab-links`` writes), and :func:`build` adds the rest:

- find the kit (the folder holding ``labs/``) here or above, as on a laptop or in a clone;
- in Colab, where a notebook opened from GitHub arrives alone: clone the kit (with advice when
  that fails) and ``%pip install -r requirements.txt`` (Colab's own ``%pip`` offers a restart only
  when a package the session had imported changed);
- move into the kit, wherever the notebook was opened: what a notebook writes (``runs/names``,
  ``submission.zip``) lands where the kit's README and Makefile look for it, in Colab and on a laptop
  (where Jupyter starts a notebook in its own folder, ``homework/``) alike.

Building keeps the cell ids of the notebook already there, so the same source gives the same bytes."""

from __future__ import annotations

import re
from pathlib import Path

SETUP = r"""import sys, pathlib
KIT = next((p for p in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents) if (p / "labs").is_dir()), pathlib.Path("attention-lab").absolute())
if not (KIT / "labs").is_dir() and "google.colab" in sys.modules:   # opened alone in Colab: fetch the kit
    !git clone --quiet --depth 1 --branch {KIT_BRANCH} {KIT_REPOSITORY} {KIT} || echo "Could not fetch the kit: if its repository is private, upload the kit to Colab and %cd into it."
    %pip install --quiet -r {KIT}/requirements.txt
assert (KIT / "labs").is_dir(), "Cannot find the Attention Lab kit: open this notebook from inside it (the folder that holds labs/)."
%cd {KIT}
sys.path.insert(0, str(KIT))"""
REPOSITORY_LINE = re.compile(r"^KIT_REPOSITORY, KIT_BRANCH = (.*)$", re.MULTILINE)


def setup_cell_index(notebook) -> int:
    """The index of the cell that holds the repository line (there must be exactly one)."""
    found = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and REPOSITORY_LINE.search(cell.source)
    ]
    if len(found) != 1:
        raise ValueError(
            "a notebook source needs exactly one code cell starting with "
            "'KIT_REPOSITORY, KIT_BRANCH = ' (the kit's setup cell)"
        )
    return found[0]


def build(source: str, notebook: Path | None = None) -> str:
    """The ``.ipynb`` text for the jupytext ``source``: its setup cell completed, the cell ids of ``notebook``
    kept."""
    import jupytext
    import nbformat
    from jupytext.combine import combine_inputs_with_outputs

    built = jupytext.reads(source, fmt="py:percent")
    cell = built.cells[setup_cell_index(built)]
    cell.source = REPOSITORY_LINE.search(cell.source).group(0) + "\n" + SETUP
    if notebook is not None and notebook.is_file():
        built = combine_inputs_with_outputs(built, nbformat.read(notebook, as_version=4), fmt="py:percent")
    return jupytext.writes(built, fmt="ipynb") + "\n"


def notebook_sources(root: Path) -> list[Path]:
    """The notebooks' jupytext sources under ``root``: each ``.py`` with an ``.ipynb`` beside it."""
    return sorted(
        p
        for folder in ("demos", "homework")
        for p in (root / folder).glob("*.py")
        if p.with_suffix(".ipynb").is_file()
    )


def build_all(root: Path, log=print) -> list[Path]:
    """Rebuild every notebook under ``root`` from its source; returns those whose bytes changed."""
    from labs.common.files import write_text

    changed = []
    for source in notebook_sources(root):
        notebook = source.with_suffix(".ipynb")
        text = build(source.read_text(encoding="utf-8"), notebook)
        if text != notebook.read_text(encoding="utf-8"):
            write_text(notebook, text)
            changed.append(notebook)
            log(f"rebuilt {notebook.relative_to(root)}")
    return changed
