"""Notebooks: each .ipynb matches its jupytext source, and runs top to bottom in the tiny configuration."""

import json
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import REPO_ROOT, run_cli
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


def _linked_kit(source: Path) -> Path:
    """A kit of its own for one notebook run, made of links to this one's parts, with a folder ``opened-here``
    below its root to start the notebook in."""
    kit = Path(tempfile.mkdtemp(prefix=f"test-notebook-{source.stem}-"))
    for part in KIT_PARTS:
        (kit / part).symlink_to(REPO_ROOT / part)
    (kit / "opened-here").mkdir()
    return kit


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
    kit = _linked_kit(source)
    try:
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


def test_homework_cells_run_before_training_or_scoring_say_which_cell_to_run_first(monkeypatch):
    """A student runs the heatmap and explorer cells before training, or after training but before the
    evaluation cell: one line that names the cell to run, never a NameError."""
    monkeypatch.setenv("ATTENTION_LAB_TINY", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    source = REPO_ROOT / "homework" / "hw3_1_thai_name_transliteration.py"
    notebook = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    code = [(i, cell) for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]

    def cell(marker: str):
        found = [(i, c) for i, c in code if marker in c.source]
        assert len(found) == 1, marker
        return found[0]

    first = [
        cell("KIT_REPOSITORY"),
        cell("from autograder.batch import check_bundle"),
        cell("sample_names(8"),
    ]
    looking = [
        cell("plot_attention(result.source"),
        cell("explore(run.model"),
        cell("beam_search_view(run.model"),
    ]
    kit = _linked_kit(source)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(kit / "opened-here")}},
    )

    def errors(cells) -> list[str]:
        said = []
        for index, one in cells:
            client.execute_cell(one, index)
            said += [f"{o.ename}: {o.evalue}" for o in one.get("outputs", []) if o.output_type == "error"]
        return said

    try:
        with client.setup_kernel():
            assert errors(first) == []
            before_training = errors(looking)
            assert errors([cell("run = train(config")]) == []
            before_scoring = errors(looking)
            assert errors([cell("candidates = [r.alternatives for r in results]")]) == []
            scored = errors(looking)
    finally:
        shutil.rmtree(kit, ignore_errors=True)
    assert len(before_training) == 3 and all(
        e.startswith("InputError: there is no trained model yet") for e in before_training
    ), before_training
    assert len(before_scoring) == 3 and all(
        e.startswith("InputError: the names have not been scored yet") and "How good is it?" in e
        for e in before_scoring
    ), before_scoring
    assert scored == []


def test_the_homework_notebook_uses_a_model_trained_in_a_terminal(monkeypatch):
    """TRAIN = False: the training cell loads what `python -m labs train` wrote into the run folder, says so,
    and the cells below it (scoring, the heatmaps, the export) run on that model. A smoke run's model, loaded
    outside the smoke mode, is exported to tiny.zip, never over submission.zip."""
    monkeypatch.setenv("ATTENTION_LAB_TINY", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    source = REPO_ROOT / "homework" / "hw3_1_thai_name_transliteration.py"
    notebook = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    training = [cell for cell in notebook.cells if "run = train(config" in cell.source]
    assert len(training) == 1 and "\nTRAIN = True   #" in training[0].source
    training[0].source = training[0].source.replace("\nTRAIN = True   #", "\nTRAIN = False   #")
    [export_cell] = [cell for cell in notebook.cells if "STUDENT_ID = " in cell.source]
    kit = _linked_kit(source)
    try:
        trained = run_cli(
            "train", "name-transliteration", "--tiny", "--seed", "5", "--quiet", "--out", "runs/tiny", cwd=kit
        )
        assert trained.returncode == 0, trained.stderr
        metrics = json.loads((kit / "runs" / "tiny" / "metrics.json").read_text(encoding="utf-8"))
        client = NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(kit / "opened-here")}},
        )
        with client.setup_kernel():
            for index, cell in enumerate(notebook.cells):
                client.execute_cell(cell, index)
            bundle = (kit / "tiny.zip").is_file()
            (kit / "tiny.zip").unlink()
            # Out of the smoke mode, with the smoke run's model loaded: the export cell as a student runs it.
            again = nbformat.v4.new_code_cell(
                "TINY = False\n"
                + export_cell.source.replace(
                    'STUDENT_ID = "tiny-run" if TINY else ""', 'STUDENT_ID = "6512345678"'
                )
            )
            notebook.cells.append(again)
            client.execute_cell(again, len(notebook.cells) - 1)
            redirected = (kit / "tiny.zip").is_file() and not (kit / "submission.zip").exists()
    finally:
        shutil.rmtree(kit, ignore_errors=True)
    text = "\n".join(
        output.get("text", "") for cell in notebook.cells[:-1] for output in cell.get("outputs", [])
    )
    assert f"Trained {metrics['epochs_done']} epoch" in text and "Training the" not in text
    assert "Loaded the model in runs/tiny/, trained earlier (seed 5); this cell trained nothing." in text
    assert "as a --tiny run does" in text and "set TRAIN = True to train the real model" in text
    assert "points on the public dev set" in text and bundle
    said = "\n".join(output.get("text", "") for output in again.get("outputs", []))
    assert "it goes to tiny.zip, not submission.zip" in said and redirected, said
