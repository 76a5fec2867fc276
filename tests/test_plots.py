"""Plots: files a person can open, and charts that show what matters."""

from labs.common.plots import plot_training_curves


def test_training_curve_png_zooms_to_the_bound_and_names_hidden_points(tmp_path):
    path = tmp_path / "curve.png"
    history = {"train": [1.745, 1.568, 1.566], "validation": [1.569, 1.566, 1.565]}
    figure = plot_training_curves(history, bound=1.5597, path=path)
    axis = figure.axes[0]
    assert path.read_bytes()[:4] == b"\x89PNG"
    low, high = axis.get_ylim()
    assert low < 1.5597 < 1.565 < high < 1.745
    assert any("train, epoch 1: 1.745" in text.get_text() for text in axis.texts)


def test_without_a_bound_every_point_is_on_the_chart():
    figure = plot_training_curves({"train": [3.0, 2.0], "validation": [2.5, 1.5]})
    low, high = figure.axes[0].get_ylim()
    assert low <= 1.5 and high >= 3.0
    assert not figure.axes[0].texts


def test_an_attention_heatmaps_title_stays_inside_its_figure_for_a_long_output():
    """An untrained model writes up to the longest output; its title breaks over lines, not past the edge."""
    import numpy as np

    from labs.common.plots import plot_attention

    source = "สมชาย ใจดี"
    for output in ("Soooommmchaaaaiiii Jaaaaiiiidd" + "e" * 20, "S" + "o" * 62):  # spaced, and one long word
        figure = plot_attention(source, output, np.full((len(output) + 1, len(source)), 0.1))
        figure.canvas.draw()
        title = figure.axes[0].title
        box = title.get_window_extent(figure.canvas.get_renderer())
        assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1, (output, box, figure.bbox)


def test_a_heatmaps_title_shows_the_models_words_as_text_never_as_math(tmp_path):
    """A model's output in `$...$` was drawn as matplotlib's math: `$\\hspace{99999999}x$` stopped the drawing
    (the student's feedback went without its heatmaps), a smaller space pushed the output out of sight."""
    import numpy as np

    from labs.common.plots import plot_attention

    output = "$\\hspace{99999999}x$"
    figure = plot_attention("abc", output, np.full((len(output) + 1, 3), 1 / 3), path=tmp_path / "a.png")
    assert (tmp_path / "a.png").stat().st_size > 0 and figure.axes[0].get_title() == f"abc  →  {output}"
