"""Colab installs nothing heavy: requirements.txt resolves around Colab's own packages, on Colab's Python.

The cheap step of ``benchmarks/colab_stack.py`` (which also runs the notebooks on Colab's pins and
grades their bundles): pip's dry run for CPython 3.13 on Linux x86_64, wheels only. It reads
PyPI (as CI and this machine can), installs nothing, and takes about 20 s.
"""

from tests.conftest import REPO_ROOT, load_benchmark


def _colab_stack():
    return load_benchmark("colab_stack")


def test_requirements_keep_colabs_packages_and_have_python_313_wheels():
    colab = _colab_stack()
    resolved = colab.resolve_for_colab()
    assert resolved["error"] == "", (
        f"pip cannot install requirements.txt beside Colab's pins:\n{resolved['error']}"
    )
    assert {name: resolved["packages"][name] for name in colab.COLAB_PINS} == colab.COLAB_PINS
    assert {"faker", "babel", "pythainlp", "onnxruntime", "jupytext"} <= set(resolved["packages"])
    no_313_wheel = {
        name: wheel
        for name, wheel in resolved["wheels"].items()
        if not wheel.endswith(".whl") or not any(tag in wheel for tag in ("-cp313-", "-abi3-", "-none-"))
    }
    assert not no_313_wheel and resolved["ok"]


def test_a_floor_above_colabs_keras_is_caught(tmp_path):
    colab = _colab_stack()
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        (REPO_ROOT / "requirements.txt")
        .read_text(encoding="utf-8")
        .replace("keras>=3.13.2,<4", "keras>=3.14,<4"),
        encoding="utf-8",
    )
    assert "keras>=3.14" in requirements.read_text(encoding="utf-8")
    resolved = colab.resolve_for_colab(requirements)
    assert not resolved["ok"] and "keras" in resolved["error"].lower()
