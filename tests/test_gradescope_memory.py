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

from autograder.hidden import make_hidden_set
from tests.conftest import REPO_ROOT, load_benchmark

# Run alone, after the rest (make test): it fills a container's memory.
pytestmark = pytest.mark.serial

gradescope_limits = load_benchmark("gradescope_limits")


@pytest.fixture
def container():
    """A function that makes a memory cgroup with a limit in MB (removed afterwards), or skips the test."""
    made = []

    def make(limit_mb: int):
        cgroup = gradescope_limits.MemoryCgroup.create(limit_mb)
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


def test_a_child_killed_for_the_containers_memory_gives_the_setting_to_raise(container, tmp_path):
    from labs.common.submission import export
    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.train import train

    run = train(DateTranslationConfig.tiny(train_size=200), verbose=0)
    export(
        run.model, run.vocabs, task="date-translation", student_id="gs", out=tmp_path / "submission" / "s.zip"
    )
    (tmp_path / "secret.txt").write_text("a-course-secret-0123456789abcdef")
    make_hidden_set("date-translation", tmp_path / "secret.txt", tmp_path / "hidden", n=20)
    cgroup = container(300)  # the grader needs about 70 MB, its child (TensorFlow) 400 MB or more
    ran = _run_in(
        cgroup,
        "-c",
        gradescope_limits.AS_IN_A_CONTAINER,
        "gradescope-run",
        "--task",
        "date-translation",
        "--hidden",
        str(tmp_path / "hidden"),
        "--submission",
        str(tmp_path / "submission"),
        "--rubric",
        str(REPO_ROOT / "autograder" / "rubrics" / "date-translation.toml"),
        "--results",
        str(tmp_path / "results.json"),
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert cgroup.oom_kills() >= 1  # the kernel did kill, for memory
    line = "out of memory: raise the autograder's memory to 600 MB"
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["output"] == line and ran.stdout.strip().splitlines()[-1] == line
    assert results["extra_data"]["attention_lab"]["status"] == "machine-out-of-memory"


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
    line = "out of memory: raise the autograder's memory to 1536 MB"
    assert ran.returncode == 0 and ran.stdout.strip() == line, ran.stderr
    assert json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["output"] == line


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
