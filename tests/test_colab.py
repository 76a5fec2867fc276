"""Open-in-Colab links: the README's badges, the notebooks' setup cell, and the cell fetching the kit in
Colab."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from labs.common.errors import InputError
from tests.conftest import REPO_ROOT, run_cli
from tools.colab import (
    NOTEBOOKS,
    Repository,
    notebook_table,
    parse_repository,
    read_kit_repository,
    readme_with_table,
    write_colab_links,
)
from tools.notebooks import build

SOURCES = [REPO_ROOT / Path(notebook).with_suffix(".py") for notebook in NOTEBOOKS]


def _setup_cell(source: Path) -> str:
    """The code cell of a built notebook that finds (or in Colab fetches) the kit."""
    notebook = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    cells = [
        c.source
        for c in notebook.cells
        if c.cell_type == "code" and "KIT_REPOSITORY, KIT_BRANCH =" in c.source
    ]
    assert len(cells) == 1, f"{source.name} should have one setup cell"
    return cells[0]


@pytest.mark.parametrize(
    "text, name",
    [
        ("course-org/attention-lab", "course-org/attention-lab"),
        ("https://github.com/course-org/attention-lab.git", "course-org/attention-lab"),
        ("github.com/a-b/c.d_e/", "a-b/c.d_e"),
    ],
)
def test_a_repository_is_read_from_the_forms_people_paste(text, name):
    repository = parse_repository(text, "fall-2026")
    assert repository == Repository(name, "fall-2026")
    assert repository.clone_url == f"https://github.com/{name}.git"
    assert (
        repository.colab_url("demos/x.ipynb")
        == f"https://colab.research.google.com/github/{name}/blob/fall-2026/demos/x.ipynb"
    )


@pytest.mark.parametrize(
    "text",
    [
        "attention-lab",
        "gitlab.com/a/b",
        "a/b/c",
        "a/../b",
        "git@github.com:a/b.git",
        "https://example.org/a/b",
        "a/b c",
        "",
    ],
)
def test_anything_but_a_github_repository_is_refused_with_advice(text):
    with pytest.raises(InputError, match="OWNER/NAME"):
        parse_repository(text)


def test_a_bad_branch_is_refused():
    for branch in ("", "a b", "../x", "-x", "a;rm"):
        with pytest.raises(InputError, match="branch"):
            parse_repository("a/b", branch)


def test_every_notebook_has_the_setup_cell_the_builder_writes():
    """The setup lines are written once (tools.notebooks.SETUP): a source holds only its repository line."""
    from tools.notebooks import SETUP

    for source in SOURCES:
        cell = _setup_cell(source)
        assert cell.endswith(SETUP) and len(cell.splitlines()) <= 10, source.name
        assert "KIT_REPOSITORY, KIT_BRANCH" in source.read_text(encoding="utf-8")
        assert "git clone" not in source.read_text(encoding="utf-8")  # not pasted into the source by hand


def test_the_readme_table_matches_the_repository_the_notebooks_name():
    repositories = {read_kit_repository(source.read_text(encoding="utf-8")) for source in SOURCES}
    assert len(repositories) == 1
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_with_table(readme, repositories.pop()) == readme, (
        "README.md's notebook table is out of date: run `python -m labs colab-links --repo ...` (or --remove)"
    )


@pytest.fixture
def kit_copy(tmp_path):
    """The files colab-links rewrites, copied from the kit."""
    shutil.copyfile(REPO_ROOT / "README.md", tmp_path / "README.md")
    for notebook in NOTEBOOKS:
        for suffix in (".py", ".ipynb"):
            path = Path(notebook).with_suffix(suffix)
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REPO_ROOT / path, tmp_path / path)
    return tmp_path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_links_go_into_the_readme_and_every_notebook_and_come_out_again(kit_copy):
    before = _snapshot(kit_copy)
    repository = Repository("course-org/attention-lab", "fall-2026")
    written = write_colab_links(kit_copy, repository, log=lambda line: None)
    assert len(written) == 2 * len(NOTEBOOKS) + 1
    readme = (kit_copy / "README.md").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS:
        assert (
            f"(https://colab.research.google.com/github/course-org/attention-lab/blob/fall-2026/{notebook})"
            in readme
        )
        source = (kit_copy / notebook).with_suffix(".py")
        assert read_kit_repository(source.read_text(encoding="utf-8")) == repository
        paired = nbformat.read(kit_copy / notebook, as_version=4)
        built = nbformat.reads(build(source.read_text(encoding="utf-8")), as_version=4)
        assert [c.source for c in paired.cells] == [c.source for c in built.cells]
        assert (
            'KIT_REPOSITORY, KIT_BRANCH = "https://github.com/course-org/attention-lab.git", "fall-2026"'
            in _setup_cell(source)
        )
    write_colab_links(kit_copy, None, log=lambda line: None)
    assert _snapshot(kit_copy) == before, "removing the links should give back the same bytes"


def test_a_notebook_without_the_repository_line_stops_everything_before_any_write(kit_copy):
    broken = kit_copy / Path(list(NOTEBOOKS)[-1]).with_suffix(".py")
    broken.write_text(
        broken.read_text(encoding="utf-8").replace("KIT_REPOSITORY, KIT_BRANCH = ", "KIT = "),
        encoding="utf-8",
    )
    before = _snapshot(kit_copy)
    with pytest.raises(InputError, match="exactly one line starting 'KIT_REPOSITORY, KIT_BRANCH = '"):
        write_colab_links(kit_copy, Repository("a/b"), log=lambda line: None)
    assert _snapshot(kit_copy) == before


def test_the_table_says_how_to_add_links_when_there_are_none():
    assert "python -m labs colab-links --repo OWNER/NAME" in notebook_table(None)
    assert "colab-badge.svg" not in notebook_table(None)


def test_the_command_line_refuses_a_bad_repository_in_one_line():
    result = run_cli("colab-links", "--repo", "gitlab.com/a/b")
    assert result.returncode == 2
    assert (
        result.stderr.count("\n") == 1
        and "not a GitHub repository" in result.stderr
        and "Traceback" not in result.stderr
    )


# ---- the setup cell, run as Colab would run it ----


def _fake_kit_repository(folder: Path, requirements: str = "# nothing to install\n") -> str:
    """A git repository holding a minimal kit (by default an empty requirements list, so pip needs no
    network)."""
    (folder / "labs").mkdir(parents=True)
    (folder / "labs" / "__init__.py").write_text("")
    (folder / "requirements.txt").write_text(requirements)
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (
        ["init", "--quiet", "--initial-branch", "fall-2026"],
        ["add", "."],
        ["commit", "--quiet", "-m", "kit"],
    ):
        subprocess.run(git + command, check=True)
    return folder.as_uri()


def _run_setup_cell(cell: str, cwd: Path, repository: str, in_colab: bool) -> subprocess.CompletedProcess:
    """Run the setup cell under IPython (it holds magics) in ``cwd``; in Colab, ``google.colab`` is already
    imported."""
    cell, replaced = re.subn(
        r"^KIT_REPOSITORY, KIT_BRANCH = .*$",
        lambda _: f'KIT_REPOSITORY, KIT_BRANCH = {json.dumps(repository)}, "fall-2026"',
        cell,
        flags=re.MULTILINE,
    )
    assert replaced == 1
    program = (
        "import sys, types\n"
        + ("sys.modules['google.colab'] = types.ModuleType('google.colab')\n" if in_colab else "")
        + cell
        + "\nimport os\nprint('KIT', KIT)\nprint('CWD', os.getcwd())\n"
    )
    return subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--quick", "-c", program],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_in_colab_the_setup_cell_clones_the_kit_installs_and_moves_into_it(tmp_path):
    cell = _setup_cell(SOURCES[0])
    url = _fake_kit_repository(tmp_path / "origin" / "attention-lab")
    content = tmp_path / "content"
    content.mkdir()
    first = _run_setup_cell(cell, content, url, in_colab=True)
    assert first.returncode == 0, first.stdout + first.stderr
    kit = content / "attention-lab"
    assert (kit / "labs" / "__init__.py").is_file()
    assert f"KIT {kit}" in first.stdout and f"CWD {kit}" in first.stdout
    # After a runtime restart Colab starts again in /content: the clone is reused, not fetched again.
    shutil.rmtree(tmp_path / "origin")
    again = _run_setup_cell(cell, content, url, in_colab=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"KIT {kit}" in again.stdout and "Could not fetch" not in again.stdout


def test_in_colab_a_repository_that_cannot_be_cloned_says_what_to_do(tmp_path):
    result = _run_setup_cell(
        _setup_cell(SOURCES[0]), tmp_path, (tmp_path / "nowhere").as_uri(), in_colab=True
    )
    assert result.returncode == 1
    assert (
        "Could not fetch the kit: if its repository is private, upload the kit to Colab and %cd into it."
        in result.stdout
    )
    assert "Cannot find the Attention Lab kit" in result.stdout + result.stderr


def test_outside_colab_the_setup_cell_never_clones_and_says_where_to_open_the_notebook(tmp_path):
    url = _fake_kit_repository(tmp_path / "origin" / "attention-lab")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = _run_setup_cell(_setup_cell(SOURCES[0]), elsewhere, url, in_colab=False)
    assert result.returncode == 1 and "Cannot find the Attention Lab kit" in result.stdout + result.stderr
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("in_colab", [True, False])
def test_inside_the_kit_the_setup_cell_finds_it_without_fetching_and_moves_to_its_root(in_colab):
    # Jupyter starts a notebook in its own folder; the kit's commands (and paths like runs/names) start at its
    # root, so the cell moves there, on a laptop as in Colab.
    result = _run_setup_cell(
        _setup_cell(SOURCES[0]), REPO_ROOT / "demos", "file:///nowhere", in_colab=in_colab
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"KIT {REPO_ROOT}" in result.stdout and f"CWD {REPO_ROOT}\n" in result.stdout
    assert "Could not fetch" not in result.stdout


def test_release_refuses_a_bad_colab_repository_before_writing_anything(tmp_path):
    result = run_cli("release", "homework", "--out", str(tmp_path / "kit"), "--colab-repo", "attention-lab")
    assert result.returncode == 2 and "not a GitHub repository" in result.stderr
    assert not (tmp_path / "kit").exists()


def test_what_colab_installs_leaves_its_kernel_packages_alone():
    """Colab's runtime pins ipykernel, ipython and tornado; upgrading them can crash it."""
    from packaging.requirements import Requirement

    def names(path: Path) -> set[str]:
        lines = [line.split("#")[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
        return {Requirement(line).name.lower() for line in lines if line and not line.startswith("-r")}

    runtime, dev = names(REPO_ROOT / "requirements.txt"), names(REPO_ROOT / "requirements-dev.txt")
    assert not runtime & {
        "ipykernel",
        "ipython",
        "tornado",
        "pyzmq",
        "jupyter-client",
        "notebook",
        "nbclient",
    }
    assert {"tensorflow", "keras", "pythainlp", "jupytext"} <= runtime
    assert {"pytest", "nbclient", "ipykernel"} <= dev
    assert (
        "-r requirements.txt" in (REPO_ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    )
