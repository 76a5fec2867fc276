"""The grader's status vocabulary is written once (autograder/status.py) and used by name."""

import re

from autograder import status
from autograder.reports import STATUS_ADVICE
from tests.conftest import REPO_ROOT

NAMES = {value for name, value in vars(status).items() if name.isupper() and isinstance(value, str)}


def test_every_status_has_a_meaning_and_the_child_reports_only_statuses():
    assert set(status.MEANINGS) == NAMES
    assert set(status.CHILD) <= NAMES
    assert set(STATUS_ADVICE) <= NAMES


def test_no_module_spells_a_status_where_it_sets_or_compares_one():
    """A status set by a refusal, a child's failure or a comparison is a constant, not a string."""
    spelled = re.compile(
        r"\b(BundleError|ChildError|_failure)\(\s*\"|status\"?\]? ?(==|!=) ?\"("
        + "|".join(map(re.escape, NAMES))
        + r")\""
    )
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted((REPO_ROOT / "autograder").glob("*.py"))
        if path.name != "status.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if spelled.search(line)
    ]
    assert not found, found
