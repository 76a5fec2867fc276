"""Gradescope's memory limit: when the container's memory runs out, the run says which setting to raise, in
one line.

The container is a memory cgroup with a limit, made here below the test's own cgroup (skipped
where this machine lets the test make none). As in Gradescope's container, the sandbox makes no
cgroup of its own there, so the grader and its child share the limit, and the kernel kills the
child when they need more: the sandbox makes it the kernel's first choice.
"""

import functools
import json
import os
import subprocess
import sys

import pytest

from autograder.container import MemoryCgroup
from tests.conftest import REPO_ROOT

# Run alone, after the rest (make test): it fills a container's memory.
pytestmark = pytest.mark.serial


@pytest.fixture
def container():
    """A function that makes a memory cgroup with a limit in MB (removed afterwards), or skips the test."""
    made = []

    def make(limit_mb: int):
        cgroup = MemoryCgroup.create(limit_mb)
        if cgroup is None:
            pytest.skip("this machine lets the test make no memory cgroup (a container's memory limit)")
        made.append(cgroup)
        return cgroup

    yield make
    for cgroup in made:
        cgroup.remove()


def _run_in(cgroup, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=cgroup.join,
    )


def test_a_package_in_a_container_too_small_for_the_model_gives_the_setting_to_raise(container, tmp_path):
    """The package as Gradescope runs it (``gradescope-selfcheck --memory``) in a 200 MB container: the
    grader holds about 20 MB of its own, its child (TensorFlow) about 250 MB of its own before it loads the
    model, and more of TensorFlow's files besides. (At 300 MB the child could finish the 20 hidden names
    while the kernel dropped those files and read them again; the run on the public examples was then the
    one killed, and the bundle graded with a note: right, but not this test's case. CI saw it.)

    The kernel kills the child first (the sandbox makes it so) and the grader writes the results with its
    record. Where the child is slow to die (its memory cannot be taken back at once), the kernel goes on
    to kill the grader; ``run_autograder`` then writes the same results without the record (CI saw it
    once)."""
    from autograder.gradescope import out_of_memory_result, package
    from autograder.gradescope_check import run_package, summary
    from autograder.reports import STATUS_ADVICE
    from autograder.rubric import load_rubric
    from labs.common.submission import export
    from tests.test_autograder import tiny_model_and_hidden_set
    from tests.test_gradescope_package import _container_or_skip

    _container_or_skip()
    container(64)  # or skip: the self-check makes its own, of this kind
    model, vocabs = tiny_model_and_hidden_set("date-translation", tmp_path)  # what it learned does not matter
    bundle = export(model, vocabs, task="date-translation", student_id="gs", out=tmp_path / "s.zip")
    made = package(
        "date-translation",
        tmp_path / "hidden",
        tmp_path / "autograder.zip",
        load_rubric(task="date-translation"),
    )
    check = run_package(made, bundle, memory_mb=200)
    line = "out of memory: raise the autograder's memory to 768 MB"  # twice 200, but never under Gradescope's
    assert check.oom_kills >= 1, check.output[-2000:]  # the kernel did kill, for memory
    results = dict(check.results)
    record = results.pop("extra_data", {}).get("attention_lab")
    assert record is None or record["status"] == "machine-out-of-memory", record
    # the same results whichever process the kernel killed: a score of 0, no tests, no leaderboard row
    assert results == out_of_memory_result(200)
    assert results["output"].splitlines() == [line, STATUS_ADVICE["machine-out-of-memory"]]
    assert results["score"] == 0 and results["tests"] == [] and "leaderboard" not in results
    assert line in check.output.splitlines()
    said = summary(check)
    kills = f"{check.oom_kills} process{'es' if check.oom_kills > 1 else ''}"
    assert line.split(": ", 1)[1] in said[0] and said[-1] == (
        f"memory: peak {check.peak_mb:g} MB of the container's 200 MB; the kernel killed {kills} for memory: "
        "run it again with a larger --memory to see what the package needs"
    )
    assert 0 < check.peak_mb <= 200


def _contain_in_a_300_mb_machine(monkeypatch, code: str, **limits):
    """The sandbox's run of ``python -c code`` (no isolation), in a grading machine it is told has 300 MB and
    whose cgroups it may not write (Gradescope's: no cgroup of its own for the child)."""
    from autograder import sandbox

    monkeypatch.setattr(sandbox, "memory_limit_mb", lambda: 300)
    monkeypatch.setattr(sandbox.Cgroup, "create", classmethod(lambda cls, *args: None))
    private = sandbox._private_folder({}, "none", 0)
    try:
        return sandbox._contain([sys.executable, "-c", code], private, sandbox.Limits(**limits), "none", 0)
    finally:
        sandbox._remove(private)


def test_a_child_the_kernel_killed_for_the_machines_memory_is_not_the_students_fault(monkeypatch, tmp_path):
    """The grader's side of it, where the kernel spared the grader: the child died of SIGKILL and the
    machine's count of kills rose (made to rise here)."""
    from autograder import sandbox

    kills = iter(range(100))
    monkeypatch.setattr(sandbox, "oom_kills", lambda: next(kills))
    ran = _contain_in_a_300_mb_machine(monkeypatch, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert ran.code == -9 and ran.status == "machine-out-of-memory"
    assert ran.message == (
        "the grading machine ran out of memory (its 300 MB held the grader and the model together): raise "
        "the autograder's memory to 768 MB"
    )


@pytest.mark.parametrize(
    "memory_stat, pages",
    [
        # cgroup v1 (Linux 6.1 on): the total_ lines count the cgroups below too, the others this one alone
        (
            "workingset_refault_anon 1\nworkingset_refault_file 2\ntotal_workingset_refault_anon 30\n"
            "total_workingset_refault_file 400\n",
            430,
        ),
        ("anon 7\nworkingset_refault_anon 5\nworkingset_refault_file 60\n", 65),  # v2, Linux 5.9 on
        ("anon 7\nworkingset_refault 70\n", 70),  # v2 before Linux 5.9: one line
        ("cache 4096\nrss 8192\n", 0),  # v1 before Linux 6.1: no count
    ],
)
def test_the_pages_read_back_are_read_from_each_form_of_memory_stat(memory_stat, pages):
    from autograder.container import _refaulted_pages

    assert _refaulted_pages(memory_stat) == pages


@pytest.mark.parametrize("reread_mb", [301.0, 299.0])
def test_a_timeout_in_a_machine_that_read_back_more_than_it_holds_is_told_to_the_instructor_only(
    monkeypatch, reread_mb
):
    """A run that waited until the wall-clock limit, in a 300 MB machine that meanwhile read back more than
    300 MB (made to here): the instructor's note says the machine may have been short of memory, with the
    figures; the student's status and message are the timeout's, whatever the count (their code can raise
    it, and choose the figure). A little less than 300 MB, and there is no note."""
    from autograder import sandbox

    counts = iter([0.0, reread_mb])
    monkeypatch.setattr(sandbox, "refaulted_mb", lambda: next(counts))
    ran = _contain_in_a_300_mb_machine(monkeypatch, "import time; time.sleep(60)", wall_seconds=1)
    assert ran.status == "timeout"
    assert ran.message.startswith("loading and running the model took longer than 1 s of wall-clock time")
    assert "read back" not in ran.message
    if reread_mb < 300:
        assert ran.machine_note == ""
    else:
        assert ran.machine_note.startswith("a run stopped after 1 s of wall-clock time, 0 s of CPU, ")
        assert ran.machine_note.endswith(
            f"while the grading machine read back {reread_mb:.0f} MB of memory it had pushed out, more than its "
            "300 MB: if the model is not slow otherwise, the machine was short of memory; raise it (to 768 MB) "
            "and grade again"
        )


# The child of the test below: it writes a file three times the container's size and reads it again and again,
# as TensorFlow's libraries are read back in a container too small for them; a pause after each read of the
# file, as a model waits on the disk.
READ_AGAIN = """
import sys, time
size_mb = int(sys.argv[1])
with open("big", "wb") as out:
    for _ in range(size_mb):
        out.write(bytes(1 << 20))
while True:
    with open("big", "rb") as f:
        while f.read(1 << 20):
            time.sleep(0.002)
"""

# The grader's side, in the container: the sandbox as Gradescope's read-only cgroups leave it (no cgroup of
# its own for the child), a child limited to 5 s of wall-clock time; prints the run's status, message and the
# instructor's note.
GRADE_IN_CONTAINER = """
import json, sys
from autograder import sandbox
sandbox.Cgroup.create = classmethod(lambda cls, *args: None)
private = sandbox._private_folder({}, "none", 0)
try:
    ran = sandbox._contain(
        [sys.executable, "-c", sys.argv[1], sys.argv[2]], private,
        sandbox.Limits(wall_seconds=5, file_mb=1024), "none", 0,
    )
finally:
    sandbox._remove(private)
print(json.dumps({"status": ran.status, "message": ran.message, "note": ran.machine_note}))
"""


@pytest.mark.parametrize("file_mb", [480, 16])
def test_a_container_that_thrashes_until_the_time_limit_is_told_to_the_instructor(container, file_mb):
    """In a 160 MB container the child reads a 480 MB file again and again: the kernel kills nothing, the
    pages it reads push out those it read, and the wall-clock limit stops it; the grader reads the
    container's count of what it read back, and its note for the instructor says so. A 16 MB file stays in
    memory: the same loop reads nothing back, and there is no note. Both are the student's timeout."""
    cgroup = container(160)
    ran = _run_in(cgroup, "-c", GRADE_IN_CONTAINER, READ_AGAIN, str(file_mb))
    assert ran.returncode == 0, ran.stderr[-2000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result["status"] == "timeout", result
    assert cgroup.oom_kills() == 0  # it thrashed: nothing was killed
    if file_mb == 480:
        assert "MB of memory it had pushed out, more than its 160 MB: " in result["note"], result
    else:
        assert result["note"] == "", result


def test_a_grader_killed_before_it_wrote_results_gets_the_same_line(container, tmp_path):
    """run_autograder's fallback: the grader's own process got SIGKILL (exit status 137)."""
    cgroup = container(768)
    ran = _run_in(
        cgroup,
        "-c",
        "import sys; from autograder.gradescope import write_killed_result as w; "
        "w(sys.argv[1], int(sys.argv[2]))",
        str(tmp_path / "results.json"),
        "137",
    )
    from autograder.gradescope import out_of_memory_result

    line = "out of memory: raise the autograder's memory to 1536 MB"
    assert ran.returncode == 0 and ran.stdout.strip() == line, ran.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results == out_of_memory_result(768) and results["output"].splitlines()[0] == line
    assert results["score"] == 0 and results["tests"] == []


def test_the_child_is_the_kernels_first_choice_for_memory_and_the_grader_is_not():
    """Without this the kernel once killed the grader (70 MB) instead of its child in a 300 MB container."""
    from autograder import sandbox

    child = subprocess.run(
        [sys.executable, "-c", "print(open('/proc/self/oom_score_adj').read().strip())"],
        preexec_fn=functools.partial(sandbox._before_exec, sandbox.Limits(), [], None, None),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.stdout.strip() == "1000", child.stderr
    with open("/proc/self/oom_score_adj") as grader:
        assert int(grader.read()) < 1000


def test_the_note_goes_to_the_graders_log_with_the_bundles_name_and_never_into_the_record(
    monkeypatch, caplog, tmp_path
):
    """Whatever the child made the count say, the record (which the student gets: feedback, Gradescope's
    extra_data) holds the timeout alone; the grader's log names the bundle beside the note."""
    from autograder import grade
    from autograder.hidden import load_hidden_set
    from autograder.rubric import load_rubric
    from autograder.sandbox import SandboxResult
    from labs.common.submission import export
    from tests.test_autograder import tiny_model_and_hidden_set

    model, vocabs = tiny_model_and_hidden_set("date-translation", tmp_path)
    bundle = export(model, vocabs, task="date-translation", student_id="slow", out=tmp_path / "slow.zip")
    note = "a run stopped after 240 s of wall-clock time, 3 s of CPU, while the grading machine read back 1,337 MB"
    stopped = SandboxResult(
        "timeout",
        "loading and running the model took longer than 240 s",
        {},
        240.0,
        "none",
        80.0,
        machine_note=note,
    )
    monkeypatch.setattr(grade, "run_child", lambda *args, **kwargs: stopped)
    with caplog.at_level("WARNING", logger="autograder"):
        record = grade.grade_bundle(
            bundle,
            load_rubric(task="date-translation"),
            grade.HiddenSet(tmp_path / "hidden", *load_hidden_set(tmp_path / "hidden", "date-translation")),
        )
    assert record["status"] == "timeout"
    assert "1,337" not in json.dumps(record)
    assert f"slow.zip: {note}" in [r.getMessage() for r in caplog.records]


def test_a_students_own_check_tells_them_of_their_machine_and_not_the_instructors_line(
    monkeypatch, caplog, tmp_path
):
    """``check`` runs on the student's machine: a timeout there while it read back more memory than it
    holds is told to the student in their words (close other programs), and the instructor's line, which
    says to raise the grading machine's memory, is neither printed nor logged."""
    from autograder import batch, grade
    from autograder.sandbox import SandboxResult
    from labs.common.submission import export
    from tests.test_autograder import tiny_model_and_hidden_set

    model, vocabs = tiny_model_and_hidden_set("date-translation", tmp_path)
    bundle = export(model, vocabs, task="date-translation", student_id="slow", out=tmp_path / "slow.zip")
    timeout = "loading and running the model took longer than 240 s"
    for note in ("", "a run stopped after 240 s ...: raise it (to 1,536 MB) and grade again"):
        stopped = SandboxResult("timeout", timeout, {}, 240.0, "none", 80.0, machine_note=note)
        monkeypatch.setattr(grade, "run_child", lambda *args, stopped=stopped, **kwargs: stopped)
        caplog.clear()
        with caplog.at_level("WARNING", logger="autograder"):
            record = batch.check_bundle(bundle, limit=20)
        assert record["status"] == "timeout"
        said = json.dumps(record) + "".join(r.getMessage() for r in caplog.records)
        assert "grade again" not in said and "1,536" not in said
        if note:
            assert record["message"] == f"{timeout}; {grade.OWN_MACHINE_SHORT_OF_MEMORY}"
        else:
            assert record["message"] == timeout
