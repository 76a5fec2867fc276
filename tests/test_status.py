"""The grader's status vocabulary is written once (autograder/status.py) and used by name."""

import ast
import re

from autograder import status
from autograder.reports import STATUS_ADVICE
from tests.conftest import REPO_ROOT

NAMES = {value for name, value in vars(status).items() if name.isupper() and isinstance(value, str)}


def test_every_status_has_a_meaning_and_the_child_reports_only_statuses():
    assert set(status.MEANINGS) == NAMES - {status.OK}  # "ok" is the child's word for its run, not a status
    assert set(status.CHILD) <= NAMES
    assert set(STATUS_ADVICE) <= NAMES


def test_no_module_spells_a_status_where_it_sets_or_compares_one():
    """A status set by a refusal, a child's failure or a comparison is a constant, not a string."""
    names = "|".join(map(re.escape, NAMES))
    spelled = re.compile(
        r"\b(BundleError|ChildError|_failure|result)\(\s*\""  # a refusal, a child's failure, a run's result
        rf"|(==|!=) \"({names})\""  # a comparison
        rf"|\bstatus=\"({names})\""  # a keyword
        rf"|\"status\": \"({names})\""  # a record or a child's result
        rf"|\breturn \"({names})\","  # a status and its message
        rf"|^\s+\"({names})\": f?\""  # a table keyed by status
    )
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted((REPO_ROOT / "autograder").glob("*.py"))
        if path.name != "status.py"
        for number, line in _code_lines(path)
        if spelled.search(line)
    ]
    assert not found, found


def _code_lines(path):
    """(number, line) of a module's lines outside its docstrings, which may quote a status."""
    text = path.read_text(encoding="utf-8")
    documented = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                documented.update(range(body[0].lineno, body[0].end_lineno + 1))
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if n not in documented]
