"""Attention Lab autograder: validates, sandboxes and scores student submissions.

Grading (bundle validation, the sandboxed runner, scorers, rubrics and reports) lands with
its own issue; today the package holds only its command-line entry point, which says so.
"""

__version__ = "0.1.0"
