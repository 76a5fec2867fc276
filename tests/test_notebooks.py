"""Notebooks: each .ipynb matches its jupytext source, and runs top to bottom in the tiny configuration."""

import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import REPO_ROOT
from tools.notebooks import build

SOURCES = sorted((REPO_ROOT / "demos").glob("*.py")) + sorted((REPO_ROOT / "homework").glob("hw*.py"))
# What each notebook must print when it has run to the end.
FINAL_OUTPUT = {
    "demo1_date_generation.py": "held-out cross-entropy",
    "demo2_date_translation.py": "beams:",
    "demo3_attention_variants.py": "compared: none, bahdanau",
    "hw3_1_thai_name_transliteration.py": "points on the public dev set",
}
# What each notebook leaves in the kit's folder (its setup cell moves there, wherever the notebook was opened),
# in the tiny configuration: where the README's and the kit's Makefile's commands look for them.
WRITES = {"hw3_1_thai_name_transliteration.py": ("runs/tiny/model.keras", "tiny.zip")}
# What a kit is made of, for a notebook run: everything but what runs write.
KIT_PARTS = ("labs", "autograder", "homework", "datasets", "demos", "tools", "requirements.txt")
# The explorers and beam search views each notebook shows (labs/common/explorer.py): class -> how many
VIEWS = {
    "demo1_date_generation.py": {"al-explorer": 0, "al-beam": 0},
    "demo2_date_translation.py": {"al-explorer": 1, "al-beam": 1},
    "demo3_attention_variants.py": {"al-explorer": 4, "al-beam": 0},  # two variants, then two with heads
    "hw3_1_thai_name_transliteration.py": {"al-explorer": 1, "al-beam": 1},
}


def _cells(notebook):
    return [(cell.cell_type, cell.source.strip()) for cell in notebook.cells]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_notebook_is_what_the_builder_makes_of_its_source(source):
    paired = source.with_suffix(".ipynb")
    assert paired.is_file(), f"{paired.name} is missing: run `python -m labs notebooks`"
    built = nbformat.reads(build(source.read_text(encoding="utf-8")), as_version=4)
    assert _cells(built) == _cells(nbformat.read(paired, as_version=4)), (
        f"{paired.name} is out of date: run `python -m labs notebooks`"
    )


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom_in_the_tiny_configuration(source, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_TINY", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    started = time.perf_counter()
    # Run in a kit of its own, made of links to this one's parts, from a folder below its root as Jupyter
    # runs a notebook in its own folder: the setup cell finds the kit above and moves into it, so what the
    # notebook writes (runs/, the bundle) lands in that kit's root, not among the sources that other tests
    # read meanwhile (make test runs files in parallel).
    kit = Path(tempfile.mkdtemp(prefix=f"test-notebook-{source.stem}-"))
    try:
        for part in KIT_PARTS:
            (kit / part).symlink_to(REPO_ROOT / part)
        (kit / "opened-here").mkdir()
        NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(kit / "opened-here")}},
        ).execute()
        written = {path: (kit / path).is_file() for path in WRITES.get(source.name, ())}
        assert not any((kit / "opened-here").iterdir()), "the notebook wrote beside itself, not in the kit"
    finally:
        shutil.rmtree(kit, ignore_errors=True)
    assert all(written.values()), f"not written in the kit's folder: {written}"
    text = "\n".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert "Running on the" in text
    assert FINAL_OUTPUT[source.name] in text
    shown = "\n".join(
        output.get("data", {}).get("text/html", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert {view: shown.count(f"<div class='{view}'>") for view in VIEWS[source.name]} == VIEWS[source.name]
    if VIEWS[source.name]["al-explorer"]:  # one per output, each with what it needs to run on its own
        assert "@font-face" in shown and "<script>" in shown
    print(f"{source.name}: {time.perf_counter() - started:.1f} s")
