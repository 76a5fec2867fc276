"""A static read of a layer module (a bundle's ``custom_layers.py``) before anything runs: what it imports,
what to review.

One audit, three users: the grader runs it on every bundle, and the homework's self-test and
``export`` run it on the student's file, so that a refused import is known in a second, not
after an hour of training.

The homework asks for a self-contained layer module: it may import ``keras`` and ``numpy``, and
standard modules that only compute (``math``, ``typing``, ``functools``, ``dataclasses``). A
module that imports anything else (``os``, ``sys``, ``json``, the kit), or that is large enough
to carry data, is refused before it runs.

A layer runs no code it builds: ``exec``, ``eval``, ``compile`` and ``__import__`` named in the
module are refused (``exec(compile(bytes.fromhex(...)))`` would pass any reading of the source), and
so are the allowed modules' ways to the same (:data:`RUNS_BUILT_CODE`: ``typing.get_type_hints``
evaluates a string, Keras' ``LazyModule`` imports any module by name).

Reading source cannot see through every trick (``getattr`` chains, a built-in looked up by a
built string), so the audit also lists for the instructor, as notes:

- the names such tricks use (``open``, ``getattr``, ``__subclasses__``, ``__globals__``, and a
  traceback's or a frame's way to other modules' globals: ``__traceback__``, ``tb_frame``,
  ``f_back``, ``f_globals``, ...);
- what the allowed modules hand on of the rest of Python (:data:`REACHES_OUT`): ``numpy`` and
  ``keras`` import ``os``, ``sys``, ``subprocess``, ``ctypes``, ``importlib``, ``pickle``,
  ``urllib`` and more, and keep them as attributes (``numpy.testing.extbuild.subprocess``,
  ``keras.src.utils.file_utils.urlretrieve``), and offer file and network functions of their
  own (``numpy.load``, ``numpy.fromfile``, ``keras.utils.get_file``). Any attribute, or string,
  of those names is listed with its line. The list is checked against what the installed
  ``numpy`` and ``keras`` hold (``tests/test_layer_audit.py``).

The sandbox, not this check, is what keeps the answers out of reach (:mod:`autograder.sandbox`)."""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, field

ALLOWED_IMPORTS = ("keras", "numpy", "math", "typing", "functools", "dataclasses", "__future__")
MAX_MODULE_BYTES = 100_000  # the solution is about 5 kB; a layer module carries no data
RUNS_BUILT_CODE = (
    "exec",
    "eval",
    "compile",
    "__import__",
    # What the allowed modules offer that does the same with a string the module builds (chr codes read as
    # no word): typing evaluates annotation strings (get_type_hints, ForwardRef, and annotations set at run
    # time, which functools.singledispatch evaluates too), Keras imports a module by its name (LazyModule),
    # rebuilds a function from bytecode (func_load) or lets a config do it (enable_unsafe_deserialization).
    "get_type_hints",
    "ForwardRef",
    "_eval_type",
    "evaluate_forward_ref",
    "__annotations__",
    "__annotate__",
    "singledispatch",
    "singledispatchmethod",
    "LazyModule",
    "func_load",
    "enable_unsafe_deserialization",
    "safe_mode",
    # numpy's: a test helper that compiles and runs a string (measure, runstring), and pickles, which run code
    "measure",
    "runstring",
    "allow_pickle",
)
# Of those, the words a layer may well use for names of its own: refused as an attribute or an import only.
COMMON_WORDS = {"measure"}
REVIEW_NAMES = {
    "open",
    "globals",
    "locals",
    "vars",
    "getattr",
    "setattr",
    "delattr",
    "breakpoint",
    "input",
    "memoryview",
    "__builtins__",
    "__subclasses__",
    "__globals__",
    "__code__",
    "__closure__",
    "__loader__",
    "__spec__",
    "__dict__",
    "__bases__",
    "__mro__",
    "__reduce__",
    "__getattribute__",
    # a traceback's and a frame's way to the globals of the code that called the layer (the grader's)
    "__traceback__",
    "tb_frame",
    "tb_next",
    "f_back",
    "f_globals",
    "f_locals",
    "f_builtins",
    "f_code",
    "gi_frame",
    "cr_frame",
    "ag_frame",
    "_getframe",
    "currentframe",
    "__self__",
    "__func__",
    "modules",
}
# What numpy and keras hand on of the rest of Python, by the attribute names they keep it under: modules that
# reach files, processes, the network or other code, and functions that read or write files or fetch URLs.
REACHES_OUT = {
    "os",
    "posix",
    "sys",
    "subprocess",
    "socket",
    "ctypes",
    "ctypeslib",
    "importlib",
    "builtins",
    "io",
    "pickle",
    "marshal",
    "shutil",
    "pathlib",
    "tempfile",
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "gc",
    "inspect",
    "h5py",
    "requests",
    "urllib",
    "http",
    "tarfile",
    "zipfile",
    "signal",
    "mmap",
    "glob",
    "runpy",
    "pkgutil",
    "shlex",
    "platform",
    "Path",
    "RLock",
    "StringIO",
    "ThreadPool",
    "_open",
    "urlretrieve",
    "urlopen",
    "mkdtemp",
    "mkstemp",
    "get_ident",
    "c_intp",
    "_ndptr_base",
    "interface",
    "system",
    "popen",
    "load",
    "save",
    "savez",
    "savez_compressed",
    "fromfile",
    "fromregex",
    "open_memmap",
    "read_array",
    "tofile",
    "memmap",
    "loadtxt",
    "genfromtxt",
    "savetxt",
    "DataSource",
    "get_file",
    "load_model",
    "load_weights",
    "save_weights",
}


# In a string, the words that reach past the allowed modules by name: a format string's attribute and index
# lookups ("{0.__init__.__globals__[sys]}"), or a key into globals. Plain words ("open", "load") are left to
# the names the code uses, so that a message or a docstring is no note.
_STRING_WORD = re.compile(
    r"\b(__\w+__|(?:f|tb|gi|cr|ag)_\w+|os|sys|subprocess|socket|ctypes|importlib|builtins|"
    r"pickle|marshal|shutil|pathlib|tempfile|urllib|h5py|_getframe)\b"
)


def _words(node: ast.AST, docstring: bool) -> list[str]:
    """The names a node uses that the audit looks at: a name, an attribute, a keyword of a ``match`` class
    pattern (``case object(os=found)`` reads an attribute), and, outside docstrings, such words in a
    string."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.MatchClass):
        return list(node.kwd_attrs)
    if isinstance(node, ast.keyword) and node.arg:  # f(safe_mode=False) names safe_mode
        return [node.arg]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and not docstring:
        return _STRING_WORD.findall(node.value)
    return []


@dataclass
class Audit:
    allowed: bool
    message: str = ""
    review: list[str] = field(default_factory=list)  # names an instructor should look at


_PARSING = threading.Lock()


def parse_python(source: bytes | str, name: str = "<unknown>") -> ast.Module:
    """``ast.parse``, one thread at a time.

    CPython 3.11 counts the depth of the syntax tree it builds in one place that every thread shares: a
    thread switch in the middle of a parse (a finalizer that the garbage collector runs) made the other
    thread's parse fail with ``SystemError: AST constructor recursion depth mismatch``. The grader
    audits two bundles at once, and a bundle had been graded "error" for it."""
    with _PARSING:
        return ast.parse(source, filename=name)


def audit_module(source: bytes, name: str = "custom_layers.py") -> Audit:
    """Whether a ``custom_layers.py`` keeps to the homework's rules, and what in it deserves a look.

    ``name`` is the file as the reader knows it (the student's ``homework/kv_attention.py``)."""
    if len(source) > MAX_MODULE_BYTES:
        return Audit(
            False,
            f"{name} is {len(source) / 1000:.0f} kB; a layer module needs no more than "
            f"{MAX_MODULE_BYTES // 1000} kB (it may not carry data)",
        )
    try:  # the bytes, read as Python reads the file it imports: a byte-order mark, a coding line
        tree = parse_python(source, name)
    except SyntaxError:  # Python's import parses the same bytes the same way: it cannot run either, and
        return Audit(True)  # loading it reports the student's typo in Python's words
    except (ValueError, RecursionError, MemoryError) as error:  # what cannot be read cannot be checked
        return Audit(False, f"{name} cannot be read as Python ({type(error).__name__})")
    review, reaches = set(), {}
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in sorted(ast.walk(tree), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = ["." * node.level + (node.module or "")]
            for alias in node.names:  # what it takes from an allowed module (numpy.testing's os, say)
                if alias.name in RUNS_BUILT_CODE:
                    return Audit(
                        False,
                        f"{name} imports {alias.name} (line {node.lineno}); the homework's layer "
                        "module may not run code it builds",
                        sorted(review),
                    )
                if alias.name in REVIEW_NAMES | REACHES_OUT:
                    reaches.setdefault(alias.name, node.lineno)
        else:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
                if len(node.args) + len(node.keywords) > 1:  # type(name, bases, namespace): a class from data
                    return Audit(
                        False,
                        f"{name} uses type(name, bases, namespace) (line {node.lineno}); the homework's "
                        "layer module may not run code it builds (dataclasses turn a namespace into code): "
                        "write the class out",
                        sorted(review),
                    )
            for word in _words(node, id(node) in docstrings):
                if word in RUNS_BUILT_CODE and (
                    isinstance(node, (ast.Attribute, ast.keyword))
                    or (isinstance(node, ast.Name) and word not in COMMON_WORDS)
                ):
                    return Audit(
                        False,
                        f"{name} uses {word} (line {node.lineno}); the homework's layer module "
                        "may not run code it builds",
                        sorted(review),
                    )
                if word in REVIEW_NAMES and isinstance(node, (ast.Name, ast.Attribute)):
                    review.add(word)
                elif word in REACHES_OUT or word in REVIEW_NAMES:
                    reaches.setdefault(word, node.lineno)
            continue
        for module in modules:
            if module.split(".")[0] not in ALLOWED_IMPORTS:
                return Audit(
                    False,
                    f"{name} imports {module!r} (line {node.lineno}); the homework's layer module "
                    f"may import only {', '.join(ALLOWED_IMPORTS[:-1])}",
                    sorted(review),
                )
    review |= {
        f"{word} (line {line}, through an allowed module or by name)" for word, line in reaches.items()
    }
    return Audit(True, "", sorted(review))
