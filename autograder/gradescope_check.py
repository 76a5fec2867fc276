"""Run a Gradescope package on one bundle the way Gradescope runs it, before uploading it.

    python -m autograder gradescope-selfcheck autograder.zip submission.zip

Gradescope unpacks ``autograder.zip`` into ``/autograder/source``, copies ``run_autograder`` to
``/autograder/run_autograder``, puts the student's upload (a zip is unpacked) into
``/autograder/submission`` and runs ``run_autograder`` as root in a Docker container: Docker's
default seccomp profile refuses new namespaces and mounts, and the container's cgroups are
read-only. This does the same on this machine, in a folder of its own:

- the package unpacked into ``ROOT/autograder/source``, ``run_autograder`` copied beside it, the
  bundle's files in ``ROOT/autograder/submission``, a ``submission_metadata.json``;
- ``setup.sh``'s Python environment: this kit's own virtual environment, seen through an overlay
  at ``source/.venv``, so that ``run_autograder``'s ``chmod`` changes the overlay, not the kit;
- in a mount namespace of its own: the cgroup file system read-only (so the sandbox makes no
  cgroup), folders on the way to Python that other users may not enter (``/root``, where pyenv
  keeps it) opened as a container image has them, and then :data:`autograder.seccomp.CONTAINER`
  installed, so that ``run_autograder`` and all it starts can make no namespace and mount nothing;
- ``run_autograder`` run as it is, exactly its own ``chmod``s; ``results.json`` read back;
- with ``--memory MB``, all of it in a memory cgroup with that limit, as Gradescope's container
  (768 MB by default): the grader and its child share it, and the kernel kills one of them when
  they need more. The check says the peak and the kernel's kills.

It needs Linux, root and ``unshare`` (as Gradescope's containers do), and the kit's virtual
environment (``make`` creates ``.venv``). The test suite runs it on bundles of every task.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from autograder.claims import clean_message
from autograder.container import GRADESCOPE_DEFAULT_MB, MACHINE_READ_BACK, MemoryCgroup
from labs.common.errors import InputError

MIN_MEMORY_MB = 64  # a floor against a mistyped --memory (run_autograder still started at 64 MB here)

# Installed in the container before run_autograder starts: what Docker's default profile refuses.
_ENTER_CONTAINER = (
    "import os, sys\n"
    "from seccomp import CONTAINER, prepared\n"
    "prepared(CONTAINER).install()\n"
    "os.environ.pop('PYTHONPATH')\n"
    "os.execv('/bin/bash', ['bash', *sys.argv[1:]])"
)
# In the new mount namespace, as root: $1 the layout's root, $2 the kit's environment, $3 the overlay's
# own folder, $4 an empty folder outside them all, then pairs (a folder others cannot enter, the one
# name in it to keep); then the command.
_PREPARE = r"""
set -eu
root=$1 environment=$2 overlay=$3 stash=$4; shift 4
venv=$root/autograder/source/.venv
mkdir -p "$overlay/upper" "$overlay/work" "$venv"
mount -t overlay overlay -o "lowerdir=$environment,upperdir=$overlay/upper,workdir=$overlay/work,metacopy=on" "$venv" \
  || mount -t overlay overlay -o "lowerdir=$environment,upperdir=$overlay/upper,workdir=$overlay/work" "$venv"
while [ "$1" != "--" ]; do
    folder=$1 keep=$2; shift 2
    mkdir -p "$stash/$keep"
    mount --rbind "$folder/$keep" "$stash/$keep"
    mount -t tmpfs -o mode=755 opened "$folder"
    mkdir -p "$folder/$keep"
    mount --move "$stash/$keep" "$folder/$keep"
done; shift
awk '$5 ~ "^/sys/fs/cgroup" {print $5}' /proc/self/mountinfo | while read -r point; do
    mount -o remount,bind,ro "$point"
done
exec "$@"
"""


@dataclass
class SelfCheck:
    results: dict  # results.json as Gradescope would read it
    seconds: float  # run_autograder's wall time
    output: str  # what run_autograder printed (stdout and stderr)
    root: Path | None  # the layout, when kept
    memory_mb: int | None = None  # the container's memory limit, when one was set
    peak_mb: float | None = None  # the most memory the run used under it (what the kernel counted)
    oom_kills: int = 0  # the processes the kernel killed for that memory


def container_memory_mb(value: int | str) -> int:
    """``value`` as a container's memory in whole MB (``--memory``), or InputError (ValueError for what is
    no whole number)."""
    memory_mb = int(value)
    if memory_mb < MIN_MEMORY_MB:
        raise InputError(
            f"give the container's memory in MB, at least {MIN_MEMORY_MB} (Gradescope's default is "
            f"{GRADESCOPE_DEFAULT_MB}), not {memory_mb}"
        )
    return memory_mb


def refuse_unless_possible() -> None:
    """InputError, in one line, where this machine cannot run a package as Gradescope does."""
    if not sys.platform.startswith("linux"):
        raise InputError(
            "gradescope-selfcheck runs the package as Gradescope does, in a Linux container: run it on "
            "Linux (a Linux virtual machine or Docker container will do)"
        )
    if os.geteuid() != 0:
        raise InputError(
            "gradescope-selfcheck runs run_autograder as root, as Gradescope does: run it with sudo "
            "(sudo .venv/bin/python -m autograder gradescope-selfcheck ...)"
        )
    if (
        not shutil.which("unshare")
        or subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode
    ):
        raise InputError(
            "gradescope-selfcheck needs a mount namespace of its own (util-linux's unshare, as root)"
        )
    if sys.prefix == sys.base_prefix:
        raise InputError(
            "gradescope-selfcheck uses the kit's virtual environment as the package's: run it with "
            ".venv/bin/python (make creates .venv)"
        )


def blocked_on_the_way(paths: list[Path]) -> list[tuple[Path, str]]:
    """``(folder, name)`` for each folder on the way to ``paths`` that other users may not enter, with the
    name of the next folder on that way: what a container image would leave open."""
    blocked = []
    for needed in paths:
        for parent in needed.parents:
            if (
                parent != Path("/")
                and not os.stat(parent).st_mode & 0o001
                and parent not in [folder for folder, _ in blocked]
            ):
                blocked.append((parent, needed.relative_to(parent).parts[0]))
    return blocked


def _unpack_upload(bundle: Path, submission: Path) -> None:
    """The student's upload as Gradescope leaves it: a zip's files, or a folder's."""
    submission.mkdir(parents=True)
    if bundle.is_dir():
        for path in bundle.iterdir():
            if path.is_file() and not path.is_symlink():
                shutil.copyfile(path, submission / path.name)
        return
    try:
        with zipfile.ZipFile(bundle) as archive:
            archive.extractall(submission)
    except zipfile.BadZipFile:
        shutil.copyfile(bundle, submission / bundle.name)  # Gradescope keeps a file it cannot unpack as it is


def run_package(
    package: str | Path,
    bundle: str | Path,
    *,
    keep: str | Path | None = None,
    timeout: float = 900,
    memory_mb: int | None = None,
) -> SelfCheck:
    """Grade ``bundle`` with the Gradescope ``package`` as Gradescope runs it, in a container with
    ``memory_mb`` of memory where given; see the module's docstring."""
    package, bundle = Path(package), Path(bundle)
    for path, what in ((package, "package"), (bundle, "bundle")):
        if not path.exists():
            raise InputError(f"no {what} at {str(path)!r}")
    if memory_mb is not None:
        memory_mb = container_memory_mb(memory_mb)
    refuse_unless_possible()
    if keep is not None:
        top = Path(keep).resolve()  # the run happens in a folder of its own: paths must not be relative
        if top.exists():
            raise InputError(
                f"--keep {str(keep)!r} exists already: name a new folder (the layout is written there)"
            )
    container = MemoryCgroup.create(memory_mb) if memory_mb is not None else None
    if memory_mb is not None and container is None:
        raise InputError(
            "this machine lets the self-check make no memory cgroup for --memory (a container's memory "
            "limit): run it without --memory, or in a container started with a memory limit"
        )
    if keep is not None:
        top.mkdir(parents=True)
    else:
        top = Path(tempfile.mkdtemp(prefix="attention-lab-gradescope-"))
    top.chmod(0o755)  # stands for "/": every user may enter
    root = top / "autograder"
    source = root / "source"
    try:
        with zipfile.ZipFile(package) as archive:
            archive.extractall(source)
            for info in archive.infolist():  # unzip keeps the scripts' modes; zipfile does not
                if info.external_attr >> 16:
                    os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777)
        if not (source / "run_autograder").is_file():
            raise InputError(f"{package} has no run_autograder at its root: is it a Gradescope package?")
        if "root=${here%/source}" not in (source / "run_autograder").read_text(
            encoding="utf-8", errors="replace"
        ):
            raise InputError(
                f"{package} was written by an older kit, whose run_autograder works in /autograder "
                "itself only: package it again with python -m autograder gradescope"
            )
        shutil.copy2(source / "run_autograder", root / "run_autograder")
        _unpack_upload(bundle, root / "submission")
        (root / "submission_metadata.json").write_text(
            json.dumps({"id": 1, "users": [{"name": "Self Check"}]})
        )
        base = Path(os.path.realpath(sys.executable))
        blocked = blocked_on_the_way(
            [base, Path(sys.base_prefix).resolve(), top.resolve()]
        )  # "/" is open to all
        stash = Path(tempfile.mkdtemp(prefix="attention-lab-gradescope-stash-"))
        command = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            _PREPARE,
            "prepare",
            str(top),
            sys.prefix,
            str(top / "overlay"),
            str(stash),
            *[str(part) for pair in blocked for part in pair],
            "--",
            str(source / ".venv" / "bin" / "python"),
            "-c",
            _ENTER_CONTAINER,
            str(root / "run_autograder"),
        ]
        # This kit's seccomp module (a copy: the kit may lie where the container cannot see it) installs the
        # container's filter; run_autograder gets no PYTHONPATH.
        (top / "harness").mkdir()
        shutil.copyfile(Path(__file__).with_name("seccomp.py"), top / "harness" / "seccomp.py")
        environment = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(top / "harness"),
        }
        started = time.perf_counter()
        try:
            ran = subprocess.run(
                command,
                cwd=top,
                env=environment,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                preexec_fn=container.join if container else None,
            )
        except subprocess.TimeoutExpired:
            raise InputError(  # noqa: B904 (the timeout is the whole story)
                f"run_autograder ran longer than {timeout:.0f} s (Gradescope's default limit is 600 s)"
            )
        finally:
            subprocess.run(["rm", "-rf", "--", str(stash)], check=False)
        seconds = time.perf_counter() - started
        output = ran.stdout + ran.stderr
        try:
            results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise InputError(
                f"run_autograder wrote no results.json (exit status {ran.returncode}); its output:\n"
                + output[-3000:]
            ) from None
        return SelfCheck(
            results,
            round(seconds, 1),
            output,
            top if keep is not None else None,
            *((memory_mb, container.peak_mb(), container.oom_kills()) if container is not None else ()),
        )
    finally:
        if container is not None:
            container.remove()
        if keep is None:
            subprocess.run(["rm", "-rf", "--", str(top)], check=False)


def summary(check: SelfCheck) -> list[str]:
    """What an instructor reads: the status, isolation and score Gradescope would show, the time, and the
    memory where the run had a limit. A grader killed before it wrote its results has no status: the
    first line of its results (run_autograder's own) stands in its place."""
    record = check.results.get("extra_data", {}).get("attention_lab", {})
    said = str(check.results.get("output", "")).splitlines()
    if record:
        lines = [
            f"status: {record.get('status')}"
            + (f": {record.get('message')}" if record.get("message") else ""),
            f"isolation: {record.get('isolation')}",
            f"score: {check.results.get('score')} / {record.get('max_score')}",
        ]
    else:
        lines = [
            f"status: the grader stopped: {clean_message(said[0], 500) if said else ''}",
            f"score: {check.results.get('score')}",
        ]
    lines.append(f"run_autograder took {check.seconds:.1f} s")
    if check.memory_mb is not None:
        lines.append(_memory_line(check))
    # the grader's note for the instructor alone (the run's output, hidden from students on Gradescope), as
    # plain text: a bundle's message can hold those words too, and terminal escapes
    lines += [clean_message(line, 500) for line in check.output.splitlines() if MACHINE_READ_BACK in line]
    return lines


def _memory_line(check: SelfCheck) -> str:
    kills = check.oom_kills
    line = f"memory: peak {check.peak_mb:g} MB" if check.peak_mb is not None else "memory: peak unknown"
    line += f" of the container's {check.memory_mb} MB"
    if kills:
        return (
            f"{line}; the kernel killed {kills} process{'es' if kills > 1 else ''} for memory: run it again "
            "with a larger --memory to see what the package needs"
        )
    if check.peak_mb is not None and check.peak_mb >= 0.9 * check.memory_mb:
        return (
            f"{line} (at its limit: the kernel took back cached files to stay under it, and killed nothing)"
        )
    return line
