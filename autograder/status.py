"""Every status a graded bundle ends with: the one vocabulary the grader, the child and the reports use.

A record's ``status`` is one of these strings (gradebooks and results files hold the string); code names them
by these constants, so that a misspelt status is an import error, not a silent new one."""

from __future__ import annotations

# The child's run went well: what it says of itself, never a record's status.
OK = "ok"

GRADED = "graded"
MALFORMED = "malformed"
UNSAFE = "unsafe"
TOO_LARGE = "too-large"
WRONG_TASK = "wrong-task"
DISALLOWED = "disallowed"
NOT_ISOLATED = "not-isolated"
LOAD_FAILED = "load-failed"
WRONG_SIGNATURE = "wrong-signature"
NAN_OUTPUT = "nan-output"
TIMEOUT = "timeout"
OUT_OF_MEMORY = "out-of-memory"
MACHINE_OUT_OF_MEMORY = "machine-out-of-memory"
TOO_MANY_PROCESSES = "too-many-processes"
CRASHED = "crashed"
ERROR = "error"

# What each status means: the grader's documentation of the vocabulary, in one place (a test keeps every
# status in it).
MEANINGS = {
    GRADED: "scored on the hidden set",
    MALFORMED: "not a bundle (missing files, bad JSON, not a Keras 3 model, a broken zip, ...)",
    UNSAFE: "path traversal, links, zip bombs",
    TOO_LARGE: "over the rubric's size limit",
    WRONG_TASK: "meta.json names another task",
    DISALLOWED: "the model config names a class or module outside the allow-list, or custom_layers.py "
    "imports what the homework does not allow",
    NOT_ISOLATED: "it carries code, and this machine cannot isolate it (see --isolation)",
    LOAD_FAILED: "Keras could not load it (or its custom_layers.py failed)",
    WRONG_SIGNATURE: "it does not take the task's inputs or give its outputs",
    NAN_OUTPUT: "it outputs NaN or infinite probabilities",
    TIMEOUT: "over the rubric's time limit",
    OUT_OF_MEMORY: "over the rubric's memory limit (all its processes together)",
    MACHINE_OUT_OF_MEMORY: "the grading machine's own memory ran out (the kernel killed the model's "
    "process): the machine needs more, not the bundle less (Gradescope: Autograder Settings)",
    TOO_MANY_PROCESSES: "over the rubric's limit on processes and threads",
    CRASHED: "the grading process stopped unexpectedly (the last line of its error is the message)",
    ERROR: "anything else, with the last line of the error",
}

# What the sandboxed child may report of its own run (anything else it says is refused).
CHILD = (WRONG_SIGNATURE, LOAD_FAILED, NAN_OUTPUT, OUT_OF_MEMORY, ERROR)
