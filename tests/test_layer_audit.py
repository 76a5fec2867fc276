"""The static read of a layer module: what it refuses, and what it lists for the instructor."""

import threading
import types

import pytest

from labs.common.layer_audit import REACHES_OUT, REVIEW_NAMES, audit_module
from tests.conftest import REPO_ROOT

# Modules through which code reaches files, processes, the network or other code.
OUTSIDE = (
    "os",
    "posix",
    "sys",
    "socket",
    "subprocess",
    "ctypes",
    "importlib",
    "builtins",
    "io",
    "_io",
    "shutil",
    "pathlib",
    "tempfile",
    "urllib",
    "http",
    "pickle",
    "marshal",
    "inspect",
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "signal",
    "mmap",
    "zipfile",
    "tarfile",
    "glob",
    "runpy",
    "pkgutil",
    "gc",
    "h5py",
    "requests",
)
RISKY_BUILTINS = (
    "open",
    "exec",
    "eval",
    "compile",
    "__import__",
    "breakpoint",
    "input",
    "globals",
    "locals",
    "vars",
)


def _outside(module_name: str | None) -> bool:
    return bool(module_name) and module_name.split(".")[0] in OUTSIDE


def _handed_on(root: types.ModuleType, depth: int = 4) -> dict[str, str]:
    """Attribute name -> one path to it, for what ``root`` and its submodules (``depth`` levels) keep of the
    modules in OUTSIDE: the modules themselves, and their functions and classes (risky built-ins only)."""
    found, seen, stack = {}, set(), [(root, root.__name__, 0)]
    while stack:
        module, path, level = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        for name in dir(module):
            if name.startswith("__"):
                continue
            try:
                value = getattr(module, name)
            except Exception:
                continue
            if isinstance(value, types.ModuleType):
                if _outside(value.__name__):
                    found.setdefault(name, f"{path}.{name}")
                elif level < depth and value.__name__.startswith(root.__name__):
                    stack.append((value, f"{path}.{name}", level + 1))
            elif callable(value) and _outside(getattr(value, "__module__", None)):
                if getattr(value, "__module__", None) == "builtins" and not any(
                    value
                    is getattr(
                        __builtins__
                        if isinstance(__builtins__, types.ModuleType)
                        else types.SimpleNamespace(**__builtins__),
                        b,
                        None,
                    )
                    for b in RISKY_BUILTINS
                ):
                    continue  # int, sum, range: computing only
                found.setdefault(name, f"{path}.{name}")
    return found


def test_the_list_of_what_the_allowed_modules_hand_on_covers_the_installed_numpy_and_keras():
    import dataclasses
    import functools
    import math
    import typing

    import keras
    import numpy

    handed_on = {}
    for module in (numpy, keras, math, typing, functools, dataclasses):
        handed_on.update(_handed_on(module))
    assert {"os", "subprocess", "sys"} <= set(handed_on), handed_on  # the walk sees what it must
    missing = {name: path for name, path in handed_on.items() if name not in REACHES_OUT | REVIEW_NAMES}
    assert not missing, f"add to layer_audit.REACHES_OUT: {missing}"


@pytest.mark.parametrize(
    "code, word",
    [
        ('exec(compile(bytes.fromhex("7072696e74283129"), "x", "exec"))\n', "exec"),
        ('x = eval("1 + 1")\n', "eval"),
        ('os = __import__("o" + "s")\n', "__import__"),
        ("import builtins\n", None),
        ("f = compile\n", "compile"),
    ],
)
def test_a_module_that_runs_code_it_builds_is_refused_with_its_line(code, word):
    audit = audit_module(b"import keras\n\n" + code.encode())
    assert not audit.allowed
    if word:
        assert f"uses {word} (line 3)" in audit.message and "may not run code it builds" in audit.message


# A string built from character codes holds no word the audit could read: "__import__('os').getpid()".
BUILT = "_text({})".format([ord(c) for c in "__import__('os').getpid()"])


@pytest.mark.parametrize(
    "code, word",
    [
        (f"class Holder:\n    pass\nHolder.__annotations__ = {{'x': {BUILT}}}\n", "__annotations__"),
        ("from typing import get_type_hints\nhints = get_type_hints\n", "get_type_hints"),
        ("found = typing.get_type_hints\n", "get_type_hints"),
        ("@functools.singledispatch\ndef f(x):\n    pass\n", "singledispatch"),
        (f"found = typing.ForwardRef({BUILT})\n", "ForwardRef"),
        ("proc = keras.src.utils.module_utils.LazyModule(_text([111, 115]))\n", "LazyModule"),
        ("keras.config.enable_unsafe_deserialization()\n", "enable_unsafe_deserialization"),
        ("run = keras.src.utils.python_utils.func_load\n", "func_load"),
        # a second walk-through's: numpy's test helper runs a string, a pickle runs any callable, and an
        # unsafe deserialisation rebuilds a function from bytecode (a keyword argument is a name too)
        ("numpy.testing.measure(_text([49]))\n", "measure"),
        ("from numpy.testing import measure\n", "measure"),
        ("array = numpy.lib.format.read_array(None, allow_pickle=True)\n", "allow_pickle"),
        ("keras.saving.deserialize_keras_object({}, safe_mode=False)\n", "safe_mode"),
        # dataclasses write field names into code they run: a class whose annotations are built strings
        (f"Holder = type('Holder', (), {{{BUILT}: {{}}}})\n", "type(name, bases, namespace)"),
    ],
)
def test_the_allowed_modules_ways_to_run_a_built_string_are_refused(code, word):
    """A walk-through ran code from a module the audit let through with no note: typing evaluates annotation
    strings (functools.singledispatch does too), and Keras' LazyModule imports any module by its name, so a
    string built from character codes ran as code or named subprocess. Those names are refused, as exec is."""
    header = "import functools\nimport typing\nimport keras\nimport numpy\n\n"
    header += "def _text(codes):\n    return ''.join(map(chr, codes))\n\n"
    audit = audit_module((header + code).encode())
    assert not audit.allowed, code
    assert f"{word} (line " in audit.message and "may not run code it builds" in audit.message


def test_a_layers_own_names_that_share_a_refused_word_pass():
    """The refused words are the allowed modules' functions, not any name: a helper method ``_evaluate`` or a
    variable ``measure`` is the student's own (a review of the first list found ``_evaluate`` refused)."""
    source = b"""import keras
import numpy


class Layer(keras.layers.Layer):
    def _evaluate(self, scores):
        measure = keras.ops.sum(scores)
        return measure

    def call(self, q):
        return self._evaluate(q)


table = numpy.fromregex
"""
    audit = audit_module(source)
    assert audit.allowed, audit.message
    assert audit.review == ["fromregex (line 14, through an allowed module or by name)"]


def test_the_notes_see_through_the_allowed_modules_and_a_tracebacks_frames():
    """The attack that ran a subprocess with no note: a traceback's frames to the caller's globals."""
    source = b"""import numpy as np
import keras

def reach():
    try:
        raise ValueError()
    except ValueError as error:
        frame = error.__traceback__.tb_frame.f_back
        return frame.f_globals["subprocess"]

run = np.testing.extbuild.subprocess.run
data = np.fromfile
fetch = keras.utils.get_file
"""
    audit = audit_module(source)
    assert audit.allowed
    said = "; ".join(audit.review)
    for word in ("__traceback__", "tb_frame", "f_back", "f_globals"):
        assert word in audit.review
    assert "subprocess (line 9" in said  # first met as the string that indexes f_globals
    assert "fromfile (line 12" in said and "get_file (line 13" in said and "extbuild" not in said


def test_the_reference_layer_and_the_students_starting_file_have_nothing_to_list():
    from tools.release import strip_solutions

    reference = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    for text in (reference, strip_solutions(reference, "homework/kv_attention.py").text):
        audit = audit_module(text.encode("utf-8"), name="kv_attention.py")
        assert audit.allowed and audit.review == [], audit


def test_names_taken_from_an_allowed_module_and_read_by_a_pattern_or_a_format_string_are_listed():
    """What a walk-through found past the first version: ``from numpy... import os``, a ``match`` class
    pattern's keywords (attribute reads), a format string's lookups; a docstring's words are no note."""
    source = b'''"""Open the file and load the sys weights (a docstring: nothing to list)."""
import numpy
from numpy.testing._private.utils import os as _os
from numpy import fromfile as _read
match numpy.testing._private.utils:
    case object(subprocess=_run):
        pass
leak = "{0.__init__.__globals__[sys]}".format(numpy)
'''
    audit = audit_module(source)
    said = "; ".join(audit.review)
    assert audit.allowed
    for word, line in (("os", 3), ("fromfile", 4), ("subprocess", 6), ("__globals__", 8), ("sys", 8)):
        assert f"{word} (line {line}," in said, (word, said)
    assert "may not run code it builds" in audit_module(b"from numpy import eval as e\n").message


@pytest.mark.parametrize(
    "encoded",
    [
        lambda code: b"\xef\xbb\xbf" + code.encode("utf-8"),  # a byte-order mark, which Python skips
        lambda code: b"# -*- coding: latin-1 -*-\n" + code.encode("latin-1"),  # a coding line
        lambda code: b"# vim: set fileencoding=utf-16 :\n" + code.encode("utf-8"),  # one Python does not take
    ],
    ids=["bom", "latin-1", "utf-16"],
)
def test_a_module_is_read_as_python_reads_it(encoded):
    """A byte-order mark or a coding line once made the read fail, and a failed read let the module through
    unchecked while Python imported it all the same: the read now takes the bytes as Python does, so what it
    lets through unread is what Python cannot compile either."""
    source = encoded("import os\nos.listdir('/')\n")
    audit = audit_module(source)
    try:
        compile(source, "custom_layers.py", "exec")
    except SyntaxError:  # it cannot run: loading it says why
        assert audit.allowed
    else:  # Python would run it: the check sees its import
        assert not audit.allowed and "imports 'os' (line" in audit.message, audit.message


@pytest.mark.parametrize(
    "source",
    [
        b"def call(self:\n    pass\n",
        b"\xff\xfeimport keras\n",
        b"x = " + b"(" * 300 + b"1" + b")" * 300 + b"\n",
    ],
    ids=["syntax", "not utf-8", "too nested"],
)
def test_a_module_with_a_typo_is_left_to_python_which_cannot_import_it_either(source):
    """A student's typo reaches them in Python's words when the module loads, not as a rule broken."""
    with pytest.raises(SyntaxError):
        compile(source, "kv_attention.py", "exec")
    assert audit_module(source, name="kv_attention.py").allowed


class _Garbage:
    """An object in a reference cycle, with a finalizer: the garbage collector runs Python code while it frees it,
    and the interpreter may switch threads there, in the middle of another thread's parse."""

    def __init__(self):
        self.me = self

    def __del__(self):
        sum(range(1000))


def test_two_bundles_audited_at_once_are_both_read():
    # The grader audits two bundles at once (jobs=2). CPython 3.11 counted the depth of every thread's parse
    # in one place: a thread switch mid-parse had failed the other bundle with a SystemError ("error").
    source = (REPO_ROOT / "labs" / "common" / "layer_audit.py").read_bytes()
    audits, failures = [], []

    def audit_many():
        try:
            for _ in range(100):
                for _ in range(50):
                    _Garbage()
                audits.append(audit_module(source))
        except Exception as error:  # noqa: BLE001 - what a thread raised is the finding
            failures.append(repr(error))

    threads = [threading.Thread(target=audit_many) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(audits) == 200 and len({(a.allowed, a.message) for a in audits}) == 1
