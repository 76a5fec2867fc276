"""Notebooks are generated from their paired jupytext sources (percent format), never edited directly.

The kit rewrites a source when it releases the homework (solutions stripped) and when it
writes Colab links; this rebuilds the ``.ipynb`` beside it the way ``jupytext --sync`` does,
keeping the cell ids of the notebook already there, so the same source gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path


def paired_notebook(source: str, notebook: Path) -> str:
    """The ``.ipynb`` text for the jupytext ``source``, reusing what ``notebook`` holds (if it exists)."""
    import jupytext
    import nbformat
    from jupytext.combine import combine_inputs_with_outputs

    built = jupytext.reads(source, fmt="py:percent")
    if notebook.is_file():
        built = combine_inputs_with_outputs(built, nbformat.read(notebook, as_version=4), fmt="py:percent")
    return jupytext.writes(built, fmt="ipynb") + "\n"
