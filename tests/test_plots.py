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
