"""The student kit is a kit for students: its README and Makefile name only what works there, and it works.

A student who finished the homework (the instructor's layer stands in for theirs) follows the
README inside the released kit: self-test, a tiny training run, export, check. Every other command
the README names is one the kit's command line accepts; every make command it names runs README
commands and nothing else, with the test's interpreter in place of .venv (nothing is installed).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tests.conftest import REPO_ROOT
from tools.release import release_homework

TASK = "name-transliteration"
# What the README's placeholders stand for in this test.
PLACEHOLDERS = {"YOUR_ID": "s0001", "YOUR_SEED": "4321"}
STUDENT_DOCS = ("README.md", "homework/README.md", "Makefile")
# What students never see: the instructor's commands, and the word for what they are to write.
INSTRUCTOR = re.compile(
    r"python -m labs (release|demo|colab-links|notebooks|data build)\b"
    r"|python -m autograder (grade|hidden-set|gradescope\S*|similarity)\b"
    r"|\bmake (test|demo|datasets|browser|clean)\b|\bsolutions?\b|\binstructors?\b|reference implementation",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """The released student kit, with the homework done (the instructor's layer in place of the student's)."""
    out = tmp_path_factory.mktemp("student") / "kit"
    release_homework(out, log=lambda line: None)
    shutil.copyfile(REPO_ROOT / "homework" / "kv_attention.py", out / "homework" / "kv_attention.py")
    return out


def _run(argv: list[str], kit, timeout: int = 300) -> subprocess.CompletedProcess:
    """``argv`` run inside the kit as a student runs it: no PYTHONPATH, the kit's folder as the working one, and not
    under a make of ours (``make test`` sets MAKELEVEL, which makes a sub-make print "Entering directory")."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
    }
    return subprocess.run(
        argv, cwd=kit, env=dict(env, MPLBACKEND="Agg"), capture_output=True, text=True, timeout=timeout
    )


def _python(command: str, kit, **kwargs) -> subprocess.CompletedProcess:
    """A README command line, ``python -m ...``, run with the interpreter running the tests."""
    argv = shlex.split(command)
    assert argv[:2] == ["python", "-m"], command
    return _run([sys.executable, *argv[1:]], kit, **kwargs)


def _make(args: str, kit, **kwargs) -> subprocess.CompletedProcess:
    """``make ARGS`` with the interpreter running the tests in place of .venv (nothing is installed)."""
    return _run(["make", "--no-print-directory", *shlex.split(args), f"PY={sys.executable}"], kit, **kwargs)


def _commands(text: str) -> list[str]:
    """The ``python -m labs|autograder ...`` commands of a README (code blocks and inline code), comments cut off,
    placeholders filled in."""
    lines = [
        line
        for block in re.findall(r"```(?:bash)?\n(.*?)```", text, re.DOTALL)
        for line in block.splitlines()
    ]
    lines += re.findall(r"`(python -m (?:labs|autograder) [^`]*)`", text)
    commands = []
    for line in lines:
        words = shlex.split(line, comments=True)
        if words[:3] in (["python", "-m", "labs"], ["python", "-m", "autograder"]):
            command = shlex.join(words)
            for placeholder, value in PLACEHOLDERS.items():
                command = command.replace(placeholder, value)
            commands.append(command)
    return list(dict.fromkeys(commands))


def _make_commands(text: str) -> list[str]:
    """The arguments of each ``make TARGET [VAR=value ...]`` a README names, placeholders filled in."""
    commands = []
    for args in re.findall(r"\bmake((?: [a-z][a-z-]*)?(?: [A-Z_]+=[^\s`)]+)*)", text):
        for placeholder, value in PLACEHOLDERS.items():
            args = args.replace(placeholder, value)
        commands.append(args.strip())
    return list(dict.fromkeys(commands))


def test_the_student_kit_has_its_own_readme_and_makefile_and_no_instructor_word(kit):
    for name in STUDENT_DOCS:
        text = (kit / name).read_text(encoding="utf-8")
        assert text != (REPO_ROOT / name).read_text(encoding="utf-8"), f"{name} is the instructor's"
        found = INSTRUCTOR.search(text)
        assert found is None, f"the student kit's {name} names {found.group(0)!r}"
    assert not (kit / "homework" / "student_kit").exists() and not (kit / "requirements-dev.txt").exists()
    assert not (kit / "tests").exists(), "no tests ship in the student kit"
    readme = (kit / "README.md").read_text(encoding="utf-8")
    assert "| `homework/hw3_1_thai_name_transliteration.ipynb` |" in readme  # the notebook table, filled in


def test_every_file_the_kits_requirements_name_is_in_the_kit(kit):
    """requirements.txt ships as it is: a file its comments point to must be one the student has."""
    text = (kit / "requirements.txt").read_text(encoding="utf-8")
    named = set(re.findall(r"[\w.-]+(?:/[\w.-]+)*\.(?:py|txt|toml|md|json|cfg)\b", text))
    assert "autograder/keras_floor.py" in named  # the pattern finds what the comments name
    missing = sorted(path for path in named if not (kit / path).is_file())
    assert not missing, f"the kit's requirements.txt names files the kit lacks: {missing}"


def test_the_readme_states_the_rubric_it_is_graded_by(kit):
    readme = (kit / "README.md").read_text(encoding="utf-8")
    rubric = tomllib.loads((kit / "autograder" / "rubrics" / f"{TASK}.toml").read_text(encoding="utf-8"))
    rows = [
        [cell.strip() for cell in line.split("|")[1:-1]]
        for line in readme.splitlines()
        if line.startswith("| ")
    ]
    for metric in rubric["metric"]:
        row = next((row for row in rows if len(row) == 4 and row[1].startswith(f"`{metric['name']}`")), None)
        assert row is not None, f"the README's grade table has no row for {metric['name']}"
        points, _, full, first = row
        assert points == str(metric["points"]), metric["name"]
        assert full.startswith(f"{metric['thresholds'][0][0] * 100:g} %"), metric["name"]
        assert first.startswith(f"{metric['thresholds'][-1][0] * 100:g} %"), metric["name"]
    prose = " ".join(readme.split())
    assert f"| {rubric['architecture']['points']} | architecture" in prose
    assert f"{rubric['limits']['max_parameters']:,} parameters" in prose
    assert f"{rubric['limits']['bundle_mb']} MB" in prose and f"{rubric['grading']['beam']} beams" in prose


def test_a_student_follows_the_readme_and_the_makefile_inside_the_kit(kit):
    readme = (kit / "README.md").read_text(encoding="utf-8")
    commands = _commands(readme) + _commands((kit / "homework" / "README.md").read_text(encoding="utf-8"))

    # The README's path, command by command.
    steps = [
        "python -m labs selftest homework",
        f"python -m labs train {TASK} --out runs/tiny --tiny",
        f"python -m labs export --model runs/tiny --student-id {PLACEHOLDERS['YOUR_ID']} --out tiny.zip --overwrite",
        f"python -m autograder check tiny.zip --task {TASK}",
    ]
    for step in steps:
        assert step in commands, f"the README no longer says {step!r}"
        result = _python(step, kit)
        assert result.returncode == 0, f"{step}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert {"model.keras", "vocab.json", "metrics.json", "training_curve.png"} <= {
        p.name for p in (kit / "runs" / "tiny").iterdir()
    }  # what the README says it holds
    with zipfile.ZipFile(kit / "tiny.zip") as bundle:
        assert bundle.read("custom_layers.py") == (kit / "homework" / "kv_attention.py").read_bytes()
    assert "status: graded" in result.stdout

    # Every other command the README names is one the command line accepts, with every option it gives
    # (its own, or the program's: `python -m labs --verbose ...`).
    for command in commands:
        if command in steps:
            continue
        result = _python(command + " --help", kit, timeout=120)
        assert result.returncode == 0, f"{command}: {result.stderr[-2000:]}"
        options = result.stdout + _python(" ".join(command.split()[:3]) + " --help", kit).stdout
        for option in re.findall(r"(?<!\S)--[a-z][a-z-]*", command):
            assert option in options, f"{command}: {option} is not an option of this command"

    # The Makefile: what each make command of the README runs is a README command (dry run).
    make_commands = _make_commands(readme)
    assert {
        "setup",
        "selftest",
        "train SEED=4321",
        "train TINY=1",
        "export STUDENT_ID=s0001",
        "check",
        "help",
    } <= set(make_commands), make_commands
    for args in make_commands:
        if args.split()[:1] in ([], ["help"], ["setup"]):
            continue
        result = _make(f"-n {args}", kit)
        assert result.returncode == 0, f"make {args}: {result.stderr}"
        runs = [line.replace(sys.executable, "python") for line in result.stdout.splitlines()]
        assert runs and all(run in commands for run in runs), (
            f"make {args} runs {runs}: not what the README says"
        )
    setup = _make("-n setup", kit).stdout
    assert (
        "-m venv .venv" in setup and "-m pip install --disable-pip-version-check -r requirements.txt" in setup
    )
    assert "sys.version_info >= (3, 10)" in setup

    # ... and for real where the Makefile adds something of its own (its flags, the interpreter, a second
    # export over the first); `make selftest` and `make check` run nothing but the commands above.
    shutil.rmtree(kit / "runs" / "tiny")
    for args in ("", "train TINY=1"):
        result = _make(args, kit)
        assert result.returncode == 0, f"make {args}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert (kit / "runs" / "tiny" / "model.keras").is_file() and not (kit / "runs" / "names").exists()
    result = _make("train", kit)  # no seed of one's own: said, nothing trained
    assert result.returncode != 0 and "make train needs a seed of your own" in result.stdout + result.stderr
    shutil.copytree(kit / "runs" / "tiny", kit / "runs" / "names")  # stands for a real training run
    for args in (
        f"export STUDENT_ID={PLACEHOLDERS['YOUR_ID']}",
        f"export STUDENT_ID={PLACEHOLDERS['YOUR_ID']}",
    ):
        result = _make(args, kit)
        assert result.returncode == 0, f"make {args}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert "make selftest" in _make("", kit).stdout and (kit / "submission.zip").is_file()
    handed_in = (kit / "submission.zip").read_bytes()
    (kit / "tiny.zip").unlink(missing_ok=True)  # the README's commands wrote one above
    result = _make(f"export TINY=1 STUDENT_ID={PLACEHOLDERS['YOUR_ID']}", kit)  # the smoke run's own bundle
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert (kit / "tiny.zip").is_file() and (kit / "submission.zip").read_bytes() == handed_in
    assert not (kit / ".venv").exists(), "PY= should keep make from creating .venv"


def test_make_export_without_an_id_says_how_in_one_line_before_setting_anything_up(kit):
    result = _run(["make", "export"], kit)
    said = (result.stdout + result.stderr).strip()
    assert result.returncode != 0 and len(said.splitlines()) == 1, said
    assert "make export needs your student id: make export STUDENT_ID=" in said
    assert not (kit / ".venv").exists()
