"""TensorFlow's start-up lines, kept out of what students read.

TensorFlow writes a few lines from C++ as it loads (CPU instruction sets, "oneDNN custom operations are on",
"Could not find cuda drivers", and on a machine without a GPU "failed call to cuInit: ... CUDA error"). None
is something a student can act on, and the last one alarms. Since TensorFlow 2.16 they are written before its
logging reads ``TF_CPP_MIN_LOG_LEVEL`` (absl's "All log messages before absl::InitializeLog() is called are
written to STDERR"), so the variable alone cannot hide them.

:func:`hide_start_up_lines` therefore wraps the first ``import tensorflow`` (whoever imports it: Keras, the
kit, a notebook): while TensorFlow loads and finds its devices, file descriptor 2 goes to a temporary file;
afterwards every line of it that is not one of those log lines is written back to stderr, so a real error is
never lost. Later C++ logging honours ``TF_CPP_MIN_LOG_LEVEL`` (set to 3 by ``labs/__init__.py`` unless the
user set it), and TensorFlow's Python logger is set to errors only (its warnings, such as tf.function
"retracing", speak to framework authors). ``python -m labs --verbose``, or the user's own
``TF_CPP_MIN_LOG_LEVEL`` below 3, leaves all of it alone."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import logging
import os
import re
import sys
import tempfile

# absl's log line format (I0000 00:00:1795531267.063191   11192 port.cc:153] ...) and its pre-init warning.
START_UP_LINE = re.compile(
    rb"^[IWE]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] |"
    rb"^WARNING: All log messages before absl::InitializeLog\(\) is called"
)


@contextlib.contextmanager
def start_up_lines_filtered():
    """Send file descriptor 2 to a temporary file in the block; then write back all but TensorFlow's log
    lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [
                line for line in captured.read().splitlines(keepends=True) if not START_UP_LINE.match(line)
            ]
            if kept:
                os.write(2, b"".join(kept))


class _QuietLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        with start_up_lines_filtered():
            self.loader.exec_module(module)
            module.config.list_physical_devices()  # CUDA's start-up (cuInit) happens here, inside the filter
        # TensorFlow's Python warnings (tf.function "retracing", deprecations) speak to framework authors.
        logging.getLogger("tensorflow").setLevel(logging.ERROR)


class _FirstTensorFlowImport(importlib.abc.MetaPathFinder):
    """Finds ``tensorflow`` once, with a loader that filters its start-up lines; then steps aside."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def hide_start_up_lines() -> None:
    """Filter TensorFlow's start-up lines when it is first imported (nothing to do once it is)."""
    if "tensorflow" not in sys.modules and not any(
        isinstance(f, _FirstTensorFlowImport) for f in sys.meta_path
    ):
        sys.meta_path.insert(0, _FirstTensorFlowImport())


def show_start_up_lines() -> None:
    """Undo :func:`hide_start_up_lines` (``--verbose``), if TensorFlow is not imported yet."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _FirstTensorFlowImport)]
