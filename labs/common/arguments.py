"""The command line's building blocks: argument types that check values, and the command groups labs add to.

``python -m labs`` (:mod:`labs.cli`) builds its top-level commands; each lab adds its own (``sample``,
``formats``, ``selftest``, ``evaluate TASK``, ``data DATASET``) through :class:`Commands`, with the handler
bound by ``set_defaults(handler=...)``. A value is checked by its argument's ``type=``, so a mistake ends in
one line from argparse and exit status 2, before any work starts."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from labs.common.errors import InputError


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake on one line instead of a usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


@dataclass
class Commands:
    """Where a lab adds its commands: ``top`` (``python -m labs NAME``), ``evaluate``
    (``python -m labs evaluate TASK``) and ``data`` (``python -m labs data DATASET``)."""

    top: argparse._SubParsersAction
    evaluate: argparse._SubParsersAction
    data: argparse._SubParsersAction

    def add(self, group: str, name: str, handler: Callable, **options) -> argparse.ArgumentParser:
        parser = getattr(self, group).add_parser(name, **options)
        parser.set_defaults(handler=handler)
        return parser

    def add_generator(self, name: str, handler: Callable, what: str) -> argparse.ArgumentParser:
        """``data NAME --n N --seed S --out FILE``: a data generator's command, with the flags all of them
        take."""
        parser = self.add("data", name, handler, help=what, description=f"Write {what} as CSV.")
        parser.add_argument("--n", type=rows, required=True, help="number of rows")
        parser.add_argument(
            "--seed", type=int, default=0, help="random seed (default 0); same seed, same bytes"
        )
        parser.add_argument("--out", required=True, help="output CSV file")
        return parser


def checked(check: Callable) -> Callable:
    """An argparse ``type`` from a function that converts a text or raises InputError."""

    def convert(text: str):
        try:
            return check(text)
        except InputError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = check.__name__  # argparse names the type in "invalid ... value" messages
    return convert


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise InputError(f"must be 1 or more, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise InputError(f"must be greater than 0, got {value}")
    return value


def _rows(text: str) -> int:
    from labs.common.validation import check_row_count

    value = int(text)
    check_row_count(value)
    return value


positive_int = checked(_positive_int)
positive_int.__name__ = "int"
positive_float = checked(_positive_float)
positive_float.__name__ = "float"
rows = checked(_rows)  # a number of rows a generator may write: 0 to 10,000,000
rows.__name__ = "int"
