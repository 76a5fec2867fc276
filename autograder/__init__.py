"""Attention Lab autograder: validates, sandboxes and scores student submissions.

    bundle.py        open a bundle without trusting it (sizes, zip checks, Keras 3 format only)
    allowlist.py     the classes and modules a model's config.json may name; its real layer graph
    (labs/common/layer_audit.py: what a custom_layers.py imports; the self-test and export run it too)
    sandbox.py       run the model in an isolated, limited process (child.py is that process;
                     weights.py counts parameters and fingerprints the weights before any student
                     code runs)
    process_tree.py  every process the child starts: measured, limited (cgroups) and killed
    claims.py        what the child returns, checked against a strict schema
    hidden.py        hidden test sets from a secret seed
    rubric.py     the per-task TOML rubrics (rubrics/)
    scoring.py    metrics (the labs' own functions) and rubric points
    grade.py      one bundle, start to end; batch.py: a folder of them, and the students' check
    lms.py        what Canvas, Moodle and Gradescope downloads hold (one entry per student, late), the late
                  penalty, and grades back in their import formats (export-grades)
    reports.py    gradebook, leaderboard, feedback, Gradescope results; gradescope.py: the package
    similarity.py did two students hand in the same model: weights, near-identical weights, shared
                  mistakes (similarity.csv; for the instructor only)
    class_report.py  class-report.html: the class at a glance, for the instructor
    keras_floor.py   the oldest Keras the grader runs on (students' requirements allow older)

Command line: ``python -m autograder --help``.
"""

__version__ = "0.1.0"
