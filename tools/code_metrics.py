"""The codebase's shape in figures, for a maintainer's before and after.

    python tools/code_metrics.py            # every section
    python tools/code_metrics.py --top 15   # the 15 longest functions

Prints, over the kit's Python (labs/, autograder/, homework/, tools/, benchmarks/, demos/; not tests/, not
this file):

- the files that spell an attention variant's name as a string (the names in lab 2's registry);
- the longest functions (lines from ``def`` to the last line of the body);
- the lines longer than 110 characters;
- ``import keras``/``tensorflow`` statements inside functions.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("labs", "autograder", "homework", "tools", "benchmarks", "demos")
VARIANTS = ("bahdanau", "luong-additive", "luong-general", "scaled-dot", "multi-head", "transformer")
LIMIT = 110


def sources() -> list[Path]:
    return sorted(
        p
        for folder in FOLDERS
        for p in (ROOT / folder).rglob("*.py")
        if "student_kit" not in p.parts and p != Path(__file__).resolve()
    )


def variant_files(paths: list[Path]) -> dict[str, int]:
    """File -> how many string literals name a variant."""
    found = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        count = sum(
            1
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in VARIANTS
        )
        if count:
            found[str(path.relative_to(ROOT))] = count
    return found


def functions(paths: list[Path]) -> list[tuple[int, str]]:
    """(lines, file:function) for every function, longest first."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(ROOT)}:{node.name}"))
    return sorted(found, reverse=True)


def long_lines(paths: list[Path]) -> tuple[int, int]:
    """(lines over LIMIT, the longest line's length)."""
    lengths = [len(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines()]
    return sum(length > LIMIT for length in lengths), max(lengths)


def inner_imports(paths: list[Path]) -> int:
    """``import keras``/``tensorflow`` statements indented inside a function."""
    pattern = re.compile(r"^\s+(import|from) (keras|tensorflow)\b")
    return sum(
        bool(pattern.match(line)) for path in paths for line in path.read_text(encoding="utf-8").splitlines()
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=10, help="how many of the longest functions to list")
    args = parser.parse_args(argv)
    paths = sources()
    named = variant_files(paths)
    print(f"files that name a variant string: {len(named)}")
    for name, count in named.items():
        print(f"  {name}: {count}")
    print(f"longest functions (of {len(functions(paths))}):")
    for length, name in functions(paths)[: args.top]:
        print(f"  {length:4} {name}")
    over, longest = long_lines(paths)
    print(f"lines over {LIMIT} characters: {over} (the longest: {longest})")
    print(f"keras/tensorflow imports inside functions: {inner_imports(paths)}")


if __name__ == "__main__":
    sys.exit(main())
