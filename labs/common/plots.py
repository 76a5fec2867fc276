"""Plots shared by the labs: training curves and attention heatmaps; figures as inline PNGs for HTML pages."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import matplotlib.pyplot as plt  # picks Agg by itself on a machine without a screen
import numpy as np


def figure_png(figure, dpi: int = 100) -> bytes:
    """``figure`` as PNG bytes, without matplotlib's version in them: the same figure gives the same bytes."""
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def png_img(png: bytes, alt: str) -> str:
    """An ``<img>`` that carries ``png`` inline (a ``data:`` URL), for a page that needs no file beside it."""
    import base64
    import html

    return (
        f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{base64.b64encode(png).decode('ascii')}'>"
    )


def _zoom_to_bound(axis, history: Mapping[str, Sequence[float]], bound: float) -> None:
    """Show the approach to the bound: the first epochs' large losses would flatten the rest.

    The view spans the bound and the last curve's values, with room above; points off the top
    are named in a note on the chart.
    """
    last = list(history.values())[-1]
    top = max(max(last), bound) + 2 * (max(last) - bound) + 1e-3
    bottom = min(bound, min(min(v) for v in history.values())) - 0.1 * (top - bound)
    hidden = [(name, i + 1, v) for name, values in history.items() for i, v in enumerate(values) if v > top]
    if hidden:
        axis.set_ylim(bottom, top)
        note = "; ".join(f"{name}, epoch {epoch}: {value:.3f}" for name, epoch, value in hidden[:3])
        axis.text(0.02, 0.97, f"above the chart: {note}", transform=axis.transAxes, fontsize=8, va="top")


def plot_training_curves(
    history: Mapping[str, Sequence[float]],
    *,
    unit: str = "loss",
    bound: float | None = None,
    bound_label: str = "lower bound",
    title: str = "Training curve",
    path: str | Path | None = None,
):
    """Plot ``history`` (name -> one value per epoch), with an optional horizontal bound.

    Saves a PNG to ``path`` when given; returns the matplotlib figure (a notebook shows it)."""
    figure, axis = plt.subplots(figsize=(6, 3.6))
    for name, values in history.items():
        epochs = range(1, len(values) + 1)
        axis.plot(epochs, values, marker="o", label=name)
    if bound is not None:
        axis.axhline(bound, color="black", linestyle="--", linewidth=1, label=f"{bound_label} ({bound:.4f})")
        _zoom_to_bound(axis, history, bound)
    axis.set_xlabel("epoch")
    axis.set_ylabel(unit)
    axis.set_title(title)
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure


def plot_attention(
    source: str, output: str, weights, *, title: str | None = None, path: str | Path | None = None, axis=None
):
    """A heatmap of attention: one row per output character (and ``</s>``), one column per source character.

    ``weights`` is ``(len(output) + 1, len(source))``: row t shows where the decoder looked
    while writing output character t. Thai labels use a Thai-capable font (see
    :mod:`labs.common.fonts`). Saves a PNG to ``path`` when given; returns the figure.
    """
    from labs.common.fonts import printable_label, use_thai_font

    thai_font = use_thai_font()
    weights = np.asarray(weights)[: len(output) + 1, : len(source)]  # (outputs, sources)
    if axis is None:
        figure, axis = plt.subplots(
            figsize=(max(4.0, 0.32 * len(source) + 1.5), max(3.0, 0.32 * len(weights) + 1.2))
        )
    else:
        figure = axis.figure
    image = axis.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    axis.set_xticks(
        range(len(source)),
        [printable_label(c, thai_font) for c in source],
        rotation=90 if thai_font is None else 0,
    )
    axis.set_yticks(range(len(weights)), list(output) + ["</s>"][: len(weights) - len(output)])
    axis.set_xlabel("source")
    axis.set_ylabel("output")
    # A long title breaks at its spaces; an untrained model's output can be one long word, so it is cut short
    # there (the rows below show every letter).
    shown = output if len(output) <= 40 else output[:39] + "…"
    if title is None:  # the model's words, as they are: a `$...$` in them is text, never matplotlib's math
        axis.set_title(f"{source}  →  {shown}", wrap=True, parse_math=False)
    else:
        axis.set_title(title, wrap=True)
    figure.colorbar(image, ax=axis, fraction=0.04, pad=0.02, label="attention weight")
    figure.tight_layout()
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure


def plot_attention_grid(columns: Mapping[str, Sequence], *, path: str | Path | None = None):
    """Heatmaps side by side: one column per model (``name -> [translation, ...]``), one row per input.

    Each translation has ``source``, ``output`` and ``attention`` (as
    :class:`labs.common.seq2seq.Translation`); a column whose model has no attention is left out. Saves a PNG
    to ``path`` when given; returns the figure."""
    columns = {name: rows for name, rows in columns.items() if all(r.attention is not None for r in rows)}
    if not columns:
        raise ValueError("no model here has attention weights to draw")
    from labs.common.fonts import use_thai_font

    use_thai_font()  # before the axes exist: their tick labels take the font they are made with
    n_rows = max(len(rows) for rows in columns.values())
    longest = max(len(r.source) for rows in columns.values() for r in rows)
    figure, axes = plt.subplots(
        n_rows,
        len(columns),
        squeeze=False,
        figsize=(len(columns) * max(3.0, 0.13 * longest + 1.4), n_rows * 3.2),
    )
    for column, (name, rows) in enumerate(columns.items()):
        for row, translation in enumerate(rows):
            plot_attention(
                translation.source,
                translation.output,
                translation.attention,
                axis=axes[row][column],
                title=f"{name}\n{translation.output}",
            )
    if path is not None:
        figure.savefig(path, dpi=110)
    return figure
