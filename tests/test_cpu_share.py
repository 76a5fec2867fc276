"""Time is charged on what a bundle used itself, never on its neighbour's load.

Graded side by side (``--jobs 2``), each child is held to its share of the cores: a CPU quota on its cgroup,
or cores of its own where no cgroup can be made. The time limit is the CPU time of the child's whole tree
(many processes cannot each take the per-process limit); the wall-clock limit is a backstop. A bundle that
still ran out of time beside another is graded again alone before it gets ``timeout``.

The tests that load the machine themselves run alone, after the rest (``serial``: make test); those about
grading again alone only pretend a first run failed, and run with the others."""

import os
import threading
from types import SimpleNamespace

import pytest

import autograder.batch
import autograder.sandbox
from autograder.batch import grade_folder
from autograder.grade import missing_bundle
from autograder.process_tree import Cgroup, TreeLimits
from autograder.rubric import load_rubric
from labs.common.submission import export
from tests.conftest import REPO_ROOT, without_feedback_examples
from tests.test_autograder import _rubric, tiny_model_and_hidden_set
from tests.test_grader_attacks import PRELUDE, needs_namespaces

# The attack that worked: busy processes, each in a session of its own (the scheduler shares the
# CPU per session), while the module goes on to load the model as an honest one does. Its run is
# kept alive so that the burners outlast its neighbour's.
BURN = r"""
for _ in range(40):
    subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
time.sleep(600)
"""
# Work spread over processes that each stay far under the per-process CPU limit, waited for.
SPREAD = r"""
work = "import time\nend = time.process_time() + 4\nwhile time.process_time() < end: pass"
workers = [subprocess.Popen([sys.executable, "-c", work]) for _ in range(8)]
for worker in workers:
    worker.wait()
"""
CPU_SECONDS = 15  # the honest child uses about 6 s of CPU time on a 2-core laptop


def _cgroup_with_quota() -> bool:
    """Whether the grader may make a cgroup that holds a child to its share of the cores here."""
    group = Cgroup.create(
        f"{autograder.sandbox.TEMP_PREFIX}{os.getpid()}-probe", TreeLimits(1 << 30, 64, 1.0)
    )
    if group is None:
        return False
    group.remove()
    return group.cpu_quota


@pytest.fixture(params=["cgroup", "no cgroup"])
def containment(request, monkeypatch):
    """How the child is held to its share: a cgroup's CPU quota, or (no cgroup) cores of its own."""
    if request.param == "cgroup" and not _cgroup_with_quota():
        pytest.skip("the grader may make no cgroup with a CPU quota here")
    if request.param == "no cgroup":
        monkeypatch.setattr(autograder.sandbox.Cgroup, "create", classmethod(lambda cls, name, limits: None))
    return request.param


@pytest.fixture(scope="module")
def homework(tmp_path_factory):
    """A hidden set, a rubric with small time limits, a maker of homework bundles and the honest bundle's
    result graded alone."""
    root = tmp_path_factory.mktemp("cpu-share")
    model, vocabs = tiny_model_and_hidden_set("name-transliteration", root)
    layer = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")

    def bundle(folder, name, attack=""):
        export(model, vocabs, task="name-transliteration", student_id=name, out=folder / name)
        (folder / name / "custom_layers.py").write_text(layer + PRELUDE + attack, encoding="utf-8")

    # The wall-clock backstop: ten times what the honest child takes, beside the attack too, where its share
    # holds.
    rubric = load_rubric(
        _rubric(root, "name-transliteration", cpu_seconds=CPU_SECONDS, wall_seconds=60, memory_mb=3072)
    )
    bundle(root / "alone", "honest")
    with without_feedback_examples():  # the hidden run is what is compared
        [alone] = grade_folder(root / "alone", rubric, root / "hidden", root / "grades-alone", progress=False)
    assert alone["status"] == "graded", alone["message"]
    return SimpleNamespace(root=root, hidden=root / "hidden", rubric=rubric, bundle=bundle, alone=alone)


@pytest.mark.serial  # it measures CPU time charged under load it makes itself
@needs_namespaces
def test_a_bundle_that_burns_every_core_costs_its_neighbour_nothing(homework, containment, tmp_path):
    homework.bundle(tmp_path / "subs", "honest")
    homework.bundle(tmp_path / "subs", "burner", BURN)
    with without_feedback_examples():
        records = {
            r["student"]: r
            for r in grade_folder(
                tmp_path / "subs",
                homework.rubric,
                homework.hidden,
                tmp_path / "grades",
                jobs=2,
                progress=False,
            )
        }
    honest, burner = records["honest"], records["burner"]
    assert honest["status"] == "graded", honest["message"]
    assert (honest["score"], honest["metrics"]) == (homework.alone["score"], homework.alone["metrics"])
    assert not any(
        "graded again alone" in note for note in honest["notes"]
    )  # its first run, beside the burner
    assert burner["status"] == "timeout" and f"more than {CPU_SECONDS} s of CPU time" in burner["message"]
    assert any("graded again alone" in note for note in burner["notes"])


@pytest.mark.serial  # it loads the machine itself
@needs_namespaces
def test_cpu_time_is_charged_across_the_whole_tree(homework, containment, tmp_path):
    """Eight processes of 4 s each stay under the per-process limit; together they are over the tree's."""
    homework.bundle(tmp_path / "subs", "spreader", SPREAD)
    record = grade_folder(
        tmp_path / "subs", homework.rubric, homework.hidden, tmp_path / "grades", progress=False
    )[0]
    assert record["status"] == "timeout", record["message"]
    assert record["message"] == (
        f"loading and running the model used more than {CPU_SECONDS} s of CPU time "
        "(all its processes together)"
    )


def _first_run_times_out(
    monkeypatch, out_of_time: set[str], jobs: int, status: str = "timeout"
) -> list[tuple[str, int]]:
    """Make the first run of every bundle in ``out_of_time`` end in ``status`` (all runs, for a name ending
    in ``-always``); the others are graded for real. The first runs of a batch with ``jobs`` 2 overlap.
    Returns each run as ``(bundle, runs in flight as it started)``."""
    real = autograder.batch.grade_bundle
    runs, lock, together = [], threading.Lock(), threading.Barrier(2, timeout=60)
    in_flight = [0]

    def grade(path, rubric, hidden, **kwargs):
        with lock:
            in_flight[0] += 1
            first = path.name not in [name for name, _ in runs]
            runs.append((path.name, in_flight[0]))
        try:
            if first and jobs > 1:
                together.wait()
            if path.name in out_of_time and (first or path.name.endswith("-always")):
                record = missing_bundle(path.name, rubric, hidden, "", kwargs.get("isolation", "none"))
                record.update(
                    status=status,
                    message=f"run {len([n for n, _ in runs if n == path.name])} took "
                    "longer than 60 s of wall-clock time",
                )
                return record
            return real(path, rubric, hidden, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(autograder.batch, "grade_bundle", grade)
    return runs


@pytest.fixture(scope="module")
def lab2(tmp_path_factory):
    """Two lab-2 bundles (Keras layers only: graded anywhere) and a hidden set."""
    root = tmp_path_factory.mktemp("lab2")
    model, vocabs = tiny_model_and_hidden_set("date-translation", root)
    for name in ("slow", "slow-always"):
        export(model, vocabs, task="date-translation", student_id=name, out=root / "subs" / name)
    return root


@pytest.mark.parametrize(
    "status, why",
    [("timeout", "ran out of time"), ("machine-out-of-memory", "ran out of the grading machine's memory")],
)
def test_a_bundle_out_of_time_beside_another_is_graded_again_alone(lab2, monkeypatch, tmp_path, status, why):
    """A timeout, or the grading machine's memory (a neighbour held part of it), beside another bundle."""
    runs = _first_run_times_out(monkeypatch, {"slow", "slow-always"}, jobs=2, status=status)
    records = {
        r["student"]: r
        for r in grade_folder(
            lab2 / "subs",
            load_rubric(task="date-translation"),
            lab2 / "hidden",
            tmp_path / "grades",
            jobs=2,
            progress=False,
        )
    }
    assert sorted(name for name, _ in runs) == ["slow", "slow", "slow-always", "slow-always"]
    assert [in_flight for _, in_flight in runs[2:]] == [1, 1]  # the second runs: nothing beside them
    slow, always = records["slow"], records["slow-always"]
    assert slow["status"] == "graded", slow["message"]  # the second result stands
    assert (
        f"graded again alone: its first run, beside other bundles, {why} (run 1 took longer than 60 s"
        in "; ".join(slow["notes"])
    )
    assert always["status"] == status and always["message"].startswith("run 2 took longer")
    assert any("graded again alone" in note for note in always["notes"])
    gradebook = (tmp_path / "grades" / "gradebook.csv").read_text(encoding="utf-8")
    assert gradebook.count("graded again alone") == 2  # the instructor's notes column
    feedback = (tmp_path / "grades" / "feedback" / "slow.md").read_text(encoding="utf-8")
    assert status not in feedback and "again alone" not in feedback


def test_a_bundle_out_of_time_alone_is_not_graded_again(lab2, monkeypatch, tmp_path):
    runs = _first_run_times_out(monkeypatch, {"slow-always"}, jobs=1)
    records = {
        r["student"]: r
        for r in grade_folder(
            lab2 / "subs",
            load_rubric(task="date-translation"),
            lab2 / "hidden",
            tmp_path / "grades",
            jobs=1,
            progress=False,
        )
    }
    assert sorted(name for name, _ in runs) == ["slow", "slow-always"]
    assert records["slow-always"]["status"] == "timeout" and records["slow-always"]["notes"] == []
