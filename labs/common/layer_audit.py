"""A static read of a layer module (a bundle's ``custom_layers.py``) before anything runs: what it imports, what to review.

One audit, three users: the grader runs it on every bundle, and the homework's self-test and
``export`` run it on the student's file, so that a refused import is known in a second, not
after an hour of training.

The homework asks for a self-contained layer module: it may import ``keras`` and ``numpy``, and
standard modules that only compute (``math``, ``typing``, ``functools``, ``dataclasses``). A
module that imports anything else (``os``, ``sys``, ``json``, the kit), or that is large enough
to carry data, is refused before it runs.

Reading source cannot see through every trick (``getattr`` chains, ``__import__`` of a built
string), so the audit also lists the names such tricks use (``open``, ``exec``, ``__import__``,
``__subclasses__``, ...) as notes for the instructor to read. The sandbox, not this check, is
what keeps the answers out of reach (:mod:`autograder.sandbox`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

ALLOWED_IMPORTS = ("keras", "numpy", "math", "typing", "functools", "dataclasses", "__future__")
MAX_MODULE_BYTES = 100_000      # the solution is about 5 kB; a layer module carries no data
REVIEW_NAMES = {"open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr", "setattr",
                "delattr", "breakpoint", "input", "memoryview", "__builtins__", "__subclasses__", "__globals__",
                "__code__", "__closure__", "__loader__", "__spec__", "__dict__", "__bases__", "__mro__",
                "__reduce__", "__getattribute__", "sys", "os", "subprocess", "builtins"}


@dataclass
class Audit:
    allowed: bool
    message: str = ""
    review: list[str] = field(default_factory=list)   # names an instructor should look at


def audit_module(source: bytes, name: str = "custom_layers.py") -> Audit:
    """Whether a ``custom_layers.py`` keeps to the homework's rules, and what in it deserves a look.

    ``name`` is the file as the reader knows it (the student's ``homework/kv_attention.py``).
    """
    if len(source) > MAX_MODULE_BYTES:
        return Audit(False, f"{name} is {len(source) / 1000:.0f} kB; a layer module needs no more than "
                            f"{MAX_MODULE_BYTES // 1000} kB (it may not carry data)")
    try:
        tree = ast.parse(source.decode("utf-8"), filename=name)
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return Audit(True)   # it cannot run either: loading it reports the error to the student
    review = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = ["." * node.level + (node.module or "")]
        else:
            if isinstance(node, ast.Name) and node.id in REVIEW_NAMES:
                review.add(node.id)
            elif isinstance(node, ast.Attribute) and node.attr in REVIEW_NAMES:
                review.add(node.attr)
            continue
        for module in modules:
            if module.split(".")[0] not in ALLOWED_IMPORTS:
                return Audit(False, f"{name} imports {module!r} (line {node.lineno}); the homework's layer module "
                                    f"may import only {', '.join(ALLOWED_IMPORTS[:-1])}", sorted(review))
    return Audit(True, "", sorted(review))
