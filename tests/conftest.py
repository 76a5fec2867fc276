"""Shared helpers: run the command line as a user would, in a subprocess."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASETS = REPO_ROOT / "datasets"


def load_benchmark(name: str):
    """The module ``benchmarks/<name>.py`` (benchmarks are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_cli(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    """``python -m labs ARGS`` with the interpreter running the tests; returns the finished process."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "labs", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def cli():
    return run_cli


def without_feedback_examples():
    """A context in which grading skips its second sandboxed run per bundle, the one that decodes the public
    examples for the student's feedback (a fresh process importing TensorFlow: seconds each). For tests about
    something else; that run is tested where feedback is: test_autograder's lab-2 batch, the bundles of an
    earlier kit, the attacks (its run is one more place for a bundle's code to act), the Gradescope package,
    the demo and the student kit."""
    from unittest import mock

    import autograder.batch

    return mock.patch.object(autograder.batch, "public_examples", lambda task: [])


@pytest.fixture
def no_feedback_examples():
    """:func:`without_feedback_examples` for the whole test."""
    with without_feedback_examples():
        yield
