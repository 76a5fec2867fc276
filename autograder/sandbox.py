"""Run :mod:`autograder.child` on one bundle in a separate, contained process.

Student code (the homework's ``custom_layers.py``) runs inside that process, so the sandbox is
built on one rule: **the child sees only what it needs, and nothing it returns is trusted.**

What the child sees (its *isolation*: the strongest the machine offers, or the one asked for):

- ``namespaces`` (Linux with user namespaces): new user, PID, network, IPC and UTS namespaces,
  and a root file system built from an allow-list: the system's ``/usr`` and libraries, the
  Python installation, the kit's code (``labs/`` and ``autograder/``: never ``homework/``,
  ``datasets/`` or anything else beside them) and the bundle's files, all read-only, plus a
  small writable work folder and ``/tmp`` in memory. pythainlp and onnxruntime are masked (the
  homework's spellings come from them). No network, no other process, no host socket, no home
  folder, no hidden set, no other submission; every capability is dropped before the child
  starts, so it cannot mount, unmount or leave that root.
- ``user+nonet`` (a grader running as root where namespaces are blocked, as in Docker's default
  seccomp profile, which Gradescope uses): the child runs as an unprivileged user of its own
  (one per grader and concurrent run) that cannot read files private to root, with a seccomp
  filter that refuses every socket (:mod:`autograder.seccomp`): no network, no host socket. Its
  ``PYTHONPATH`` is a folder of two links, to the kit's ``labs/`` and ``autograder/``, so the kit's
  own folder may stay unlistable (Gradescope's ``/autograder/source`` is 0711). The grader refuses
  to start until the hidden set, the submissions, the grades, the kit's data and the romanizer
  packages are private.
- ``user``: the same where no seccomp filter can be installed: the network stays open, so a
  bundle that carries code is not run unless the instructor names the isolation
  (``grade --isolation user``).
- ``none``: no isolation. A bundle that carries code is then not run unless the instructor asks
  for it (``grade --isolation none``); see :mod:`autograder.grade`.

How much it may use: per process, limits on address space, CPU time, file size and core dumps;
for the whole tree (every process it starts), a cap on tasks and on memory, enforced by a cgroup
where the grader may create one and by a watchdog otherwise (:mod:`autograder.process_tree`).
Under user isolation without a cgroup, the watchdog also counts what the child's user holds in
the folders every user may write in (``/tmp``, ``/var/tmp``, ``/dev/shm``: tmpfs files are
memory) and in System V shared memory, and removes all of it after the run. On every exit, not
only a timeout, the whole tree is killed.

Time is charged on what the child itself used: the **CPU time of its whole tree** (every process
and thread, those that ended too; ``Limits.cpu_seconds``), so a bundle is not charged for a
neighbour's load, and forty processes cannot each take the per-process limit. The wall-clock
limit (``Limits.wall_seconds``) is a backstop for a child that waits instead of computing. When
bundles are graded side by side, each child is held to its share of the cores
(``Limits.cpus``, :func:`cpu_share`): by a CPU quota on its cgroup where the grader may set one,
else by pinning its tree to cores of its own (CPU affinity, inherited by everything it starts).
Affinity is weaker: no isolation here stops a process from widening its own affinity (that needs
no privilege; only a cpuset cgroup or a seccomp rule would), so a child that does so takes
cores from its neighbour, but still pays for them in CPU time, and a neighbour stopped by the
wall-clock backstop is graded again alone (:func:`autograder.batch.grade_folder`).

The grading machine's own memory (a Gradescope container's limit, :mod:`autograder.container`) is not the
student's to answer for: when the kernel killed the child for it, the status is ``machine-out-of-memory`` and
the message says what to raise. A machine only a little too small may kill nothing and thrash instead (its
pages pushed out and read back) until the wall-clock limit stops the run: that stays a ``timeout`` (the
student's code can make the same count), and the instructor's log says what the machine read back.

What comes back: the child's result, through a descriptor into a file the grader owns (bounded, never a pipe,
never a path the child chose); its standard output and error go to bounded files too. The model's parameter
count (and what model similarity compares) is read from its weights file by :mod:`autograder.weights`, in a
sandbox of its own that runs no student code."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

try:  # imported here, not between fork and exec: a thread of the grader may hold the loader's lock then
    import resource
except ImportError:  # Windows: no run is contained there, and a student's `check` needs none
    resource = None

from autograder.bundle import BundleError
from autograder.claims import check_weights, checked_failure, clean_message
from autograder.container import (
    MACHINE_READ_BACK,
    memory_limit_mb,
    oom_kills,
    refaulted_mb,
    suggested_memory_mb,
)
from autograder.process_tree import (
    SCRATCH,
    Cgroup,
    ProcessTree,
    TreeLimits,
    become,
    die_with,
    remove_ipc_of,
    remove_owned_by,
    remove_stale_cgroups,
)
from autograder.seccomp import NO_KEPT_STATE, NO_NETWORK, network_filter_works, prepared
from autograder.status import (
    CRASHED,
    ERROR,
    MACHINE_OUT_OF_MEMORY,
    OK,
    OUT_OF_MEMORY,
    TIMEOUT,
    TOO_MANY_PROCESSES,
)
from labs.common.errors import InputError

KIT_ROOT = Path(__file__).resolve().parents[1]
KIT_CODE = ("labs", "autograder")  # what the child may import from the kit
MASKED_PACKAGES = ("pythainlp", "onnxruntime")  # the homework's spellings come from these
ISOLATIONS = ("namespaces", "user", "none")  # what an instructor may ask for
USER_NO_NETWORK = "user+nonet"  # ``user`` with the network filter: what it gives
ISOLATES_CODE = ("namespaces", USER_NO_NETWORK)  # where a bundle's code runs unasked
MAX_RESULT_BYTES = 10_000_000
MAX_WEIGHTS_ANSWER_BYTES = 2_000_000
OPEN_FILES = 1024
STDERR_TAIL_BYTES = 16_000
SANDBOX_UID_BASE = int(
    os.environ.get("ATTENTION_LAB_SANDBOX_UID", "200000")
)  # far from real users and nobody
TEMP_PREFIX = "attention-lab-"
MEMORY_HINTS = (
    "MemoryError",
    "bad_alloc",
    "Cannot allocate memory",
    "OOM",
    "out of memory",
    "Unable to allocate",
    "failed to allocate",
)


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 300  # the backstop: a run still going after this long stops, whatever it used
    cpu_seconds: int = 900  # CPU time of the whole tree, every process and thread together
    memory_mb: int = 4096
    file_mb: int = 200
    tasks: int = 256  # processes and threads of the whole tree
    cpus: float | None = None  # cores the tree may use at once (its share: cpu_share()); None: all


def cpu_share(jobs: int) -> float | None:
    """The cores each of ``jobs`` children graded side by side may use at once, or None for a child graded
    alone.

    The grader's cores (its CPU affinity) divided among the children, and at least one core: the
    kit's child computes on one thread (:func:`_environment`), so one core is all an honest bundle
    uses, and less would slow it for its neighbours' sake.
    """
    if jobs <= 1:
        return None
    return max(1.0, len(os.sched_getaffinity(0)) / jobs)


def _own_cores(slot: int, cpus: float) -> set[int]:
    """The cores a run in ``slot`` is pinned to where no CPU quota can hold it: ``int(cpus)`` of the grader's,
    apart from those of the slots beside it (concurrent runs hold different slots, numbered from 0)."""
    cores = sorted(os.sched_getaffinity(0))
    count = min(len(cores), max(1, int(cpus)))
    return {cores[(slot * count + i) % len(cores)] for i in range(count)}


@dataclass
class SandboxResult:
    status: str  # "ok", or a failure status (timeout, out-of-memory, crashed, and the child's own)
    message: str
    data: dict  # what the child returned: a claim, checked by autograder.claims
    seconds: float  # wall time of the child
    isolation: str
    peak_memory_mb: float  # of the whole tree
    cpu_seconds: float = 0.0  # CPU time of the whole tree
    machine_note: str = ""  # for the instructor's log alone, never the student: the machine may have thrashed


UNSHARE = [
    "unshare",
    "--user",
    "--map-root-user",
    "--net",
    "--mount",
    "--pid",
    "--fork",
    "--kill-child",
    "--ipc",
    "--uts",
    "--propagation",
    "private",
]
DROP_PRIVILEGES = ["setpriv", "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all", "--"]
# Run as the init of the new namespaces: $1 is the new root (an empty folder), $2 the bundle's
# files, $3 the work folder, $4 its size in MB; then the folders to show read-only, "--mask",
# the folders to mask, "--", and the command. The new root is a small tmpfs holding only those
# folders; pivot_root moves into it and the old root is detached, so no path leads back.
_BUILD_ROOT_THEN_EXEC = r"""
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
root=$1 inputs=$2 work=$3 work_mb=$4; shift 4
mount -t tmpfs -o mode=755,size=16m attention-lab "$root"
mkdir -p "$root/dev" "$root/proc" "$root/tmp" "$root/etc" "$root/.old"
mount -t tmpfs -o size=64m,mode=1777,nosuid,nodev tmp "$root/tmp"
while [ "$1" != "--mask" ]; do
    if [ -L "$1" ]; then mkdir -p "$root${1%/*}"; ln -s "$(readlink "$1")" "$root$1"; shift; continue; fi
    if [ -d "$1" ]; then mkdir -p "$root$1"; else mkdir -p "$root${1%/*}"; : > "$root$1"; fi
    mount --rbind "$1" "$root$1"
    shift
done; shift
while [ "$1" != "--" ]; do mount -t tmpfs -o ro,size=4k,mode=555 masked "$root$1"; shift; done; shift
mkdir -p "$root$inputs" "$root$work"
mount --bind "$inputs" "$root$inputs"
for device in null zero random urandom; do : > "$root/dev/$device"; mount --bind "/dev/$device" "$root/dev/$device"; done
if [ -e /etc/ld.so.cache ]; then : > "$root/etc/ld.so.cache"; mount --bind /etc/ld.so.cache "$root/etc/ld.so.cache"; fi
# Every mount shown so far but /tmp becomes read-only, keeping the flags it had (a user namespace
# may not clear them); devices stay usable (a read-only mount still lets one write to /dev/null).
awk '{print $5, $6}' /proc/self/mountinfo | while read -r point flags; do
    point=$(printf '%b' "$point")
    case "$point" in
        "$root/tmp") ;;
        "$root"/dev/*) mount -o "remount,bind,ro,nosuid" "$point" ;;
        "$root"/*) kept=$(echo "$flags" | sed 's/^r[ow],\{0,1\}//'); mount -o "remount,bind,ro,nosuid,nodev${kept:+,$kept}" "$point" ;;
    esac
done
mount -t tmpfs -o "size=${work_mb}m,mode=777,nosuid,nodev" work "$root$work"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
echo 0 > "$root/proc/sys/user/max_user_namespaces" 2>/dev/null || true   # no namespaces of its own
mount -o remount,ro,nosuid,nodev,noexec "$root/proc"
printf 'root:x:0:0:sandbox:/:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
# Refuse to run unless all of it is read-only but the work folder and /tmp.
awk '{print $5, $6}' /proc/self/mountinfo | while read -r point flags; do
    point=$(printf '%b' "$point")
    case "$point" in "$root$work"|"$root/tmp"|"$root") ;; "$root"/*)
        case "$flags" in ro|ro,*) ;; *) echo "sandbox: $point is not read-only" >&2; exit 97 ;; esac ;;
    esac
done
cd "$root"
pivot_root . .old
umount -l /.old
rmdir /.old
mount -o remount,ro /
cd "$work"
exec "$@"
"""


def _python_paths() -> list[Path]:
    """The Python installation the child runs: prefixes, the interpreter, site-packages."""
    import site
    import sysconfig

    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(sys.executable),
        *site.getsitepackages(),
        *sysconfig.get_paths().values(),
    }
    found = set()
    for path in filter(None, paths):
        for candidate in (Path(path), Path(path).resolve()):
            if candidate.exists():
                found.add(candidate)
    return sorted(found)


def _outermost(paths) -> list[Path]:
    """``paths`` without those inside another one (one bind mount shows both)."""
    paths = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in paths:
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return kept


def package_folders(packages: tuple[str, ...] = MASKED_PACKAGES) -> list[Path]:
    """Where ``packages`` are installed (found without importing them)."""
    folders = []
    for package in packages:
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(package)
            if spec is not None and spec.submodule_search_locations:
                folders += [Path(p) for p in spec.submodule_search_locations]
    return folders


@functools.lru_cache(maxsize=1)
def view() -> tuple[list[Path], list[Path]]:
    """``(shown, masked)``: what the namespaces child sees read-only, and what is masked inside it."""
    system = [Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")]
    shown = _outermost(
        [p for p in system if p.exists() or p.is_symlink()]
        + _python_paths()
        + [KIT_ROOT / name for name in KIT_CODE]
    )
    masked = package_folders()
    # A kit that lies inside a shown folder (the Python installation, say) keeps only its code visible.
    kit = KIT_ROOT.resolve()
    if any(kit == s or s in kit.parents for s in shown):
        masked += [p for p in kit.iterdir() if p.name not in KIT_CODE and p.resolve() not in shown]
    inside = [m for m in masked if any(m == s or s in m.parents for s in shown)]
    return shown, sorted(set(inside))


def _namespace_command(private: Path, command: list[str], limits: Limits) -> list[str]:
    """``command`` in new namespaces, in the allow-listed root, with no capabilities; inside its user
    namespace, its processes and threads are counted apart from the grader's (``RLIMIT_NPROC``)."""
    shown, masked = view()
    return [
        *UNSHARE,
        "sh",
        "-c",
        _BUILD_ROOT_THEN_EXEC,
        "sandbox",
        str(private / "root"),
        str(private / "in"),
        str(private / "work"),
        str(limits.file_mb),
        *map(str, shown),
        "--mask",
        *map(str, masked),
        "--",
        "prlimit",
        f"--nproc={limits.tasks}:{limits.tasks}",
        "--",
        *DROP_PRIVILEGES,
        *command,
    ]


@functools.lru_cache(maxsize=1)
def _namespaces_work() -> bool:
    """Whether this machine builds the namespaces sandbox, and the kit imports inside it (checked once)."""
    if not all(shutil.which(tool) for tool in ("unshare", "setpriv", "prlimit", "sh")):
        return False
    private = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-probe-"))
    try:
        for name in ("root", "in", "work"):
            (private / name).mkdir()
        command = _namespace_command(
            private, [sys.executable, "-c", "import labs.common.vocab, autograder.child"], Limits(file_mb=16)
        )
        return (
            subprocess.run(
                command, env=_environment(private / "work"), capture_output=True, timeout=60
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        shutil.rmtree(private, ignore_errors=True)


def available_isolation() -> str:
    """The strongest isolation this machine offers: ``namespaces``, ``user+nonet`` or ``user`` (as root),
    ``none``."""
    if sys.platform.startswith("linux") and _namespaces_work():
        return "namespaces"
    if _user_isolation_works():
        return USER_NO_NETWORK if network_filter_works() else "user"
    return "none"


def is_user_isolation(isolation: str) -> bool:
    return isolation in ("user", USER_NO_NETWORK)


def sandbox_uid(slot: int) -> int:
    """The user id of a run under user isolation: one per grader process and concurrent run."""
    return SANDBOX_UID_BASE + (os.getpid() % 10_000) * 64 + slot


@functools.lru_cache(maxsize=1)
def _user_isolation_works() -> bool:
    """Whether a root grader can run Python as the sandbox's user (it can read the installation)."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return False
    probe = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-probe-"))
    try:
        probe.chmod(0o711)
        kit = _kit_links(probe)
        return (
            subprocess.run(
                [sys.executable, "-c", "import labs.common.vocab, autograder.child"],
                cwd="/",
                env=_environment(Path("/"), kit),
                capture_output=True,
                timeout=60,
                preexec_fn=functools.partial(become, sandbox_uid(0)),
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def _kit_links(folder: Path) -> Path:
    """``folder/kit``: links to the kit's code and nothing else, the child's ``PYTHONPATH`` under user
    isolation.

    Python lists each folder on its path to import from it; this one lists, to anyone, only the two links,
    which reach the kit's code through folders that others may enter but not list."""
    kit = folder / "kit"
    kit.mkdir()
    kit.chmod(0o755)
    for name in KIT_CODE:
        (kit / name).symlink_to(KIT_ROOT / name)
    return kit


def resolve_isolation(requested: str = "auto") -> str:
    """``requested`` (``auto`` or one of :data:`ISOLATIONS`) as the isolation to use; InputError if
    unavailable."""
    if requested == "auto":
        return available_isolation()
    if requested not in ISOLATIONS:
        raise InputError(f"unknown isolation {requested!r}; choose auto or one of: {', '.join(ISOLATIONS)}")
    if requested == "namespaces" and not (sys.platform.startswith("linux") and _namespaces_work()):
        raise InputError(
            "this machine cannot build the namespaces sandbox (user namespaces, unshare and setpriv "
            "are needed); use --isolation auto"
        )
    if requested == "user":
        if not _user_isolation_works():
            raise InputError(
                "--isolation user runs the child as another user: the grader must run as root, and "
                "Python and the kit's labs/ and autograder/ must be readable by every user"
            )
        return USER_NO_NETWORK if network_filter_works() else "user"
    return requested


def _passable(paths) -> bool:
    """Whether a user unrelated to the owners may enter every one of ``paths`` (folders)."""
    return all(os.stat(path).st_mode & 0o001 for path in paths)


def enterable_by_others(folder: Path) -> bool:
    """Whether a user unrelated to the owners could reach what is written into ``folder`` (it, and every folder
    on its way, can be entered by others): what a process writes there with the usual umask they can read."""
    folder = Path(folder).resolve()
    return folder.is_dir() and _passable((folder, *folder.parents))


def readable_by_others(path: Path) -> bool:
    """Whether a user unrelated to the owners could open ``path`` or, for a folder, any file under it.

    A file is open to such a user when every folder on its way can be entered by others and the file can be
    read by others (a folder others may enter but not list still hands out the files whose names are
    known)."""
    path = Path(path).resolve()
    if not path.exists() or not _passable(path.parents):
        return False
    if not path.is_dir():
        return bool(os.stat(path).st_mode & 0o004)
    for folder, subfolders, files in os.walk(path):
        if not os.stat(folder).st_mode & 0o001:
            subfolders.clear()  # nothing under it can be reached
            continue
        if any(os.lstat(Path(folder) / name).st_mode & 0o004 for name in files):
            return True
    return False


# ---- one run ----

_slots_lock = threading.Lock()
_busy_slots: set[int] = set()
_this_thread = threading.local()  # ``stop``: the event that ends this thread's runs (stop_runs_on)


class Stopped(BaseException):
    """A run killed because the grader is stopping. Not an ``Exception``: no barrier for a bundle's own
    failures catches it, and no record is written for that bundle."""


def stop_runs_on(event: threading.Event) -> None:
    """Kill this thread's runs the moment ``event`` is set (each then raises :class:`Stopped`): a grading
    pool's worker threads call it, so that the grader, stopped by Ctrl-C or TERM in its main thread, does not
    wait out the bundles running in them (two runs of up to the rubric's ``wall_seconds`` each)."""
    _this_thread.stop = event


@contextlib.contextmanager
def _slot():
    """A slot number free for this run (user isolation gives each concurrent run its own user id)."""
    with _slots_lock:
        slot = next(i for i in range(len(_busy_slots) + 1) if i not in _busy_slots)
        _busy_slots.add(slot)
    try:
        yield slot
    finally:
        with _slots_lock:
            _busy_slots.discard(slot)


def _environment(work: Path, kit: Path = KIT_ROOT) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(kit),
        "HOME": str(work),
        "TMPDIR": str(work),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "PYTHAINLP_OFFLINE": "1",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        "TF_NUM_INTEROP_THREADS": "1",
        "TF_NUM_INTRAOP_THREADS": os.environ.get("TF_NUM_INTRAOP_THREADS", "1"),
        "CUDA_VISIBLE_DEVICES": "",
    }


def _before_exec(
    limits: Limits,
    cgroup_files: list[str],
    uid: int | None,
    cut_network,
    cores: set[int] | None = None,
    grader: int | None = None,
) -> None:
    """In the new process, before it execs: join the cgroup, be the kernel's first choice to kill for memory,
    keep to ``cores`` (where no CPU quota holds it), set the limits, become the sandbox user, die with the
    ``grader`` (its pid), install the seccomp filter that cuts the network and keeps nothing past the run
    (``cut_network``: a prepared :class:`autograder.seccomp.Filter`, or None)."""

    def write(path: str, data: bytes) -> None:  # os-level calls only: this runs between fork and exec
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    for path in cgroup_files:
        write(path, str(os.getpid()).encode())
    # Out of memory, the kernel kills this tree first, never the grader that would report it (in a
    # container of 300 MB it once chose the grader). Written by root, the score is also its floor: the
    # child cannot lower it.
    with contextlib.suppress(OSError):
        write("/proc/self/oom_score_adj", b"1000")
    if cores:
        os.sched_setaffinity(0, cores)  # inherited by every process and thread it starts
    memory = limits.memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # Each process's own CPU time: the kernel's backstop should the watchdog lag (the tree's total is the
    # limit).
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20, limits.file_mb << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.tasks, limits.tasks))
        resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))  # POSIX message queues: memory outside the count
        become(uid)
    if grader is not None:
        die_with(grader)  # under namespaces, unshare's --kill-child takes the rest of the tree with it
    if cut_network is not None:
        cut_network.install()  # last: it also sets no_new_privs; a failure stops the child before it runs


def _tail(path: Path, size: int = STDERR_TAIL_BYTES) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - size))
        return handle.read().decode("utf-8", errors="replace")


def _failure_from_exit(code: int, stderr: str, limits: Limits) -> tuple[str, str]:
    if code == -signal.SIGXFSZ:
        return CRASHED, f"the model wrote more than {limits.file_mb} MB (to a file or its output)"
    if code in (-signal.SIGXCPU, -signal.SIGKILL) and "Killed" not in stderr:
        return TIMEOUT, f"a process of the model used more than {limits.cpu_seconds} s of CPU time"
    if any(hint in stderr for hint in MEMORY_HINTS) or code in (
        -signal.SIGABRT,
        -signal.SIGSEGV,
        -signal.SIGBUS,
    ):
        return OUT_OF_MEMORY, f"the model ran out of memory (limit {limits.memory_mb} MB) or crashed"
    # its last line, as plain text: the model wrote it, and terminal escapes in it reach the grader's log
    last = clean_message(stderr.strip().splitlines()[-1], 300) if stderr.strip() else f"exit status {code}"
    return CRASHED, f"the grading process stopped unexpectedly: {last}"


@dataclass
class _Run:
    code: int | None
    status: str | None  # set when the grader stopped the tree (timeout, memory, tasks)
    message: str
    seconds: float
    peak_memory_mb: float
    cpu_seconds: float
    machine_note: str = ""  # for the instructor alone: the machine may have thrashed (_thrash_note)


# Why the grader stopped a tree -> the status the student sees: both time limits are a ``timeout``.
STOPPED_STATUS = {"cpu-time": TIMEOUT, "wall-time": TIMEOUT}


def _verdict(stopped: str, limits: Limits, cpu_seconds: float) -> tuple[str, str]:
    """The status and message of a run the grader, or the kernel for the grading machine's memory, stopped."""
    if stopped == MACHINE_OUT_OF_MEMORY:
        limit = memory_limit_mb()
        held = f" (its {limit} MB held the grader and the model together)" if limit else ""
        return stopped, (
            f"the grading machine ran out of memory{held}: raise the autograder's memory to "
            f"{suggested_memory_mb(limit)} MB"
        )
    return STOPPED_STATUS.get(stopped, stopped), {
        "cpu-time": f"loading and running the model used more than {limits.cpu_seconds} s of CPU time "
        "(all its processes together)",
        "wall-time": f"loading and running the model took longer than {limits.wall_seconds:.0f} s of "
        f"wall-clock "
        f"time while using {cpu_seconds:.0f} s of CPU time (its limit: {limits.cpu_seconds} s); the rest "
        "of the time it was waiting",
        OUT_OF_MEMORY: f"the model's processes used more than {limits.memory_mb} MB together",
        TOO_MANY_PROCESSES: f"the model started more than {limits.tasks} processes and threads",
    }[stopped]


def _over_limit(tree: ProcessTree, cgroup: Cgroup | None, limits: Limits, elapsed: float) -> str | None:
    """Why the tree must stop now, or None: CPU time (the tree's), the wall-clock backstop, memory or tasks
    (the kernel's count where a cgroup keeps it)."""
    usage = tree.measure()
    if usage.cpu_seconds > limits.cpu_seconds:
        return "cpu-time"
    if elapsed > limits.wall_seconds:
        return "wall-time"
    if cgroup.out_of_memory() if cgroup else usage.memory_bytes > limits.memory_mb << 20:
        return OUT_OF_MEMORY
    if (
        cgroup.refused_tasks() if cgroup else usage.tasks >= limits.tasks
    ):  # at the limit, forks are already refused
        return TOO_MANY_PROCESSES
    return None


def _thrash_note(reread_mb: float, seconds: float, cpu_seconds: float) -> str:
    """The instructor's line (``SandboxResult.machine_note``) when a run that mostly waited until the
    wall-clock limit stopped it was in a machine that meanwhile read back more memory than it holds (what it
    held pushed out and read again: :func:`autograder.container.refaulted_mb`): the wait may have been the
    machine's. Else "".

    Only the instructor hears it (the grader's log; on Gradescope, the run's output). The student's status
    stays ``timeout``: their own code can read files until the count is high, and choose the figure, so it
    decides nothing and is shown to no student."""
    limit = memory_limit_mb()
    if limit is None or reread_mb <= limit:
        return ""
    return (
        f"a run stopped after {seconds:.0f} s of wall-clock time, {cpu_seconds:.0f} s of CPU, "
        f"{MACHINE_READ_BACK} {reread_mb:,.0f} MB of memory it had pushed out, more than its {limit} MB: if "
        f"the model is not slow otherwise, the machine was short of memory; raise it (to "
        f"{suggested_memory_mb(limit)} MB) and grade again"
    )


def _contain(
    command: list[str],
    private: Path,
    limits: Limits,
    isolation: str,
    slot: int,
    pass_fds: tuple[int, ...] = (),
) -> _Run:
    """Run ``command`` in ``isolation`` under ``limits``; stdout and stderr go to files in ``private``."""
    uid = sandbox_uid(slot) if is_user_isolation(isolation) else None
    # The seccomp filter: no network under user isolation; nothing kept past the run under either (under
    # namespaces the child would share the grader's session keyring).
    rules = {USER_NO_NETWORK: NO_NETWORK, "namespaces": NO_KEPT_STATE}.get(isolation)
    cut_network = prepared(rules) if rules else None
    if isolation == USER_NO_NETWORK and cut_network is None:
        raise RuntimeError("the network filter could not be prepared")  # never run such a child without it
    work = private / "work"
    if isolation == "namespaces":
        command = _namespace_command(private, command, limits)
    cgroup = Cgroup.create(
        f"{TEMP_PREFIX}{os.getpid()}-{slot}-{time.monotonic_ns()}",
        TreeLimits(limits.memory_mb << 20, limits.tasks, limits.cpus),
    )
    cores = _own_cores(slot, limits.cpus) if limits.cpus and not (cgroup and cgroup.cpu_quota) else None
    kills = oom_kills()  # the grading machine's own count: a rise means the kernel killed for its memory
    # Where the child has no cgroup of its own (Gradescope), memory the machine read back in, more than it
    # holds, may mean the run thrashed: a hint for the instructor's log. (With a cgroup of its own, what its
    # own limit made it read back would count too.)
    refaulted = refaulted_mb() if cgroup is None else None
    started = time.perf_counter()
    with open(private / "stdout", "wb") as stdout, open(private / "stderr", "wb") as stderr:
        process = subprocess.Popen(
            command,
            cwd=work,
            env=_environment(work, private / "kit" if uid is not None else KIT_ROOT),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            pass_fds=pass_fds,
            preexec_fn=functools.partial(
                _before_exec,
                limits,
                cgroup.procs_files if cgroup else [],
                uid,
                cut_network,
                cores,
                os.getpid(),
            ),
        )
    how = "namespace" if isolation == "namespaces" else "user" if uid is not None else "session"
    tree = ProcessTree(process.pid, how, uid=uid, cgroup=cgroup, scratch=(*SCRATCH, work))
    stopped, pause, stop = None, 0.01, getattr(_this_thread, "stop", None)
    try:
        while process.poll() is None:
            if stop is not None and stop.is_set():
                raise Stopped
            stopped = _over_limit(tree, cgroup, limits, time.perf_counter() - started)
            if stopped:
                break
            time.sleep(pause)
            pause = min(pause * 1.5, 0.1)
    finally:
        tree.kill()  # on every exit: nothing it started outlives it
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)
        if uid is not None:
            _remove_files_of(uid)
        if cgroup is not None:
            if stopped is None:  # the kernel may have acted as the child ended
                stopped = (
                    OUT_OF_MEMORY
                    if cgroup.out_of_memory()
                    else TOO_MANY_PROCESSES
                    if cgroup.refused_tasks()
                    else None
                )
            cgroup.remove()
        if stopped is None and process.returncode != 0 and oom_kills() > kills:
            stopped = MACHINE_OUT_OF_MEMORY
    elapsed, note = time.perf_counter() - started, ""
    if stopped == "wall-time" and refaulted is not None and tree.cpu_seconds < elapsed / 2:
        note = _thrash_note(refaulted_mb() - refaulted, elapsed, tree.cpu_seconds)
    status, message = _verdict(stopped, limits, tree.cpu_seconds) if stopped else (None, "")
    return _Run(
        process.returncode,
        status,
        message,
        elapsed,
        tree.peak_memory_bytes / 2**20,
        tree.cpu_seconds,
        note,
    )


def _private_folder(files: dict[str, Path], isolation: str, slot: int, job: dict | None = None) -> Path:
    """``attention-lab-<grader pid>-*``: the grader's own (0711), holding ``in/`` (the bundle's files and the
    job, read-only to the child), ``work/`` (the child's) and ``root/`` (where namespaces build its root).

    Under user isolation, ``in/`` is the grader's, readable by this run's group alone (the child cannot make
    it writable and fill it), and ``work/`` belongs to this run's user: a child running at the same time, as
    another user, can list ``/tmp`` but open nothing of its neighbour's."""
    private = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
    os.chmod(private, 0o711)
    inputs, work = private / "in", private / "work"
    inputs.mkdir()
    for name, path in files.items():
        shutil.copyfile(path, inputs / name)
    if job is not None:
        (inputs / "job.json").write_text(json.dumps(job), encoding="utf-8")
    (private / "root").mkdir()
    work.mkdir(mode=0o700)
    owner = sandbox_uid(slot) if is_user_isolation(isolation) else None
    if owner is not None:
        _kit_links(private)
    for path in [*inputs.iterdir(), inputs]:  # readable by the run's group alone, writable by none of its own
        if owner is not None:
            os.chown(path, os.getuid(), owner)
        os.chmod(
            path,
            (0o550 if path == inputs else 0o440)
            if owner is not None
            else (0o555 if path == inputs else 0o644),
        )
    if owner is not None:
        os.chown(work, owner, owner)  # the child's own, counted by the watchdog
    return private


def _remove(folder: Path) -> None:
    """Remove ``folder`` whatever a child left in it: read-only folders, links, trees too deep to recurse."""
    inputs = folder / "in"
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(inputs).st_mode):  # never chmod through a link
            os.chmod(inputs, 0o755)
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        pass
    except (OSError, RecursionError):
        subprocess.run(
            ["rm", "-rf", "--", str(folder)],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


def _remove_files_of(uid: int) -> None:
    """Under user isolation: what the run's user left in the folders every user may write in, and its System V
    shared memory, semaphores and message queues, go with it."""
    remove_owned_by(uid, (*SCRATCH, tempfile.gettempdir()))
    remove_ipc_of(uid)


def _read_json_file(path: Path, limit: int) -> dict | None:
    """The JSON object in the grader's own file ``path``, or None when it is missing, too large or not
    JSON."""
    try:
        if path.stat().st_size > limit:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def read_weights(files: dict[str, Path], limits: Limits, isolation: str) -> dict:
    """What ``files["model.keras"]``'s weights file holds (:mod:`autograder.weights`), read in a sandbox that
    runs no student code and checked (:func:`autograder.claims.check_weights`): ``{"parameters": n or None,
    "fingerprint": hex or None, "matrices": [...]}``."""
    quick = Limits(
        wall_seconds=min(60.0, limits.wall_seconds),
        cpu_seconds=60,
        memory_mb=limits.memory_mb,
        file_mb=4,
        tasks=limits.tasks,
        cpus=limits.cpus,
    )
    with _slot() as slot:
        private = _private_folder({"model.keras": files["model.keras"]}, isolation, slot)
        try:
            run = _contain(
                [sys.executable, "-m", "autograder.weights", str(private / "in" / "model.keras")],
                private,
                quick,
                isolation,
                slot,
            )
            answer = (
                _read_json_file(private / "stdout", MAX_WEIGHTS_ANSWER_BYTES) if run.status is None else None
            )
        finally:
            _remove(private)
    if run.status in (TIMEOUT, MACHINE_OUT_OF_MEMORY):  # what a run beside it may have caused: graded again,
        raise BundleError(  # alone (autograder.batch.AGAIN_ALONE), rather than counted as unreadable
            run.status,
            run.message
            if run.status == MACHINE_OUT_OF_MEMORY
            else f"reading the weights in model.keras (no code of the model runs) took longer than "
            f"{quick.wall_seconds:.0f} s",
        )
    return check_weights(answer)


def run_child(files: dict[str, Path], job: dict, limits: Limits, isolation: str) -> SandboxResult:
    """Run the child on ``files`` (name in the sandbox -> path to copy) with ``job``; return its outcome."""
    with _slot() as slot:
        private = _private_folder(files, isolation, slot, job)
        try:
            result_fd = os.open(private / "result.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                run = _contain(
                    [
                        sys.executable,
                        "-m",
                        "autograder.child",
                        str(private / "in"),
                        "--result-fd",
                        str(result_fd),
                    ],
                    private,
                    limits,
                    isolation,
                    slot,
                    (result_fd,),
                )
            finally:
                os.close(result_fd)
            return _outcome(run, private, limits, isolation)
        finally:
            _remove(private)


def _outcome(run: _Run, private: Path, limits: Limits, isolation: str) -> SandboxResult:
    def result(status: str, message: str, data: dict | None = None) -> SandboxResult:
        return SandboxResult(
            status,
            message,
            data or {},
            run.seconds,
            isolation,
            round(run.peak_memory_mb, 1),
            round(run.cpu_seconds, 2),
            run.machine_note,
        )

    if run.status is not None:
        return result(run.status, run.message)
    data = _read_json_file(private / "result.json", MAX_RESULT_BYTES)
    if data is not None and data.get("status") == OK:
        return result(OK, "", data)
    if data is not None and "status" in data:
        return result(*checked_failure(data["status"], data.get("message", "")))
    if (private / "result.json").stat().st_size > MAX_RESULT_BYTES:
        return result(ERROR, f"the grading process returned more than {MAX_RESULT_BYTES // 1_000_000} MB")
    return result(
        *_failure_from_exit(run.code if run.code is not None else -9, _tail(private / "stderr"), limits)
    )


def clean_stale_folders() -> int:
    """Remove the temporary folders and cgroups of graders that died without cleaning up (killed, say).

    Each is named ``attention-lab-<grader pid>-...``; those of a grader that still runs stay. Returns how many
    were removed."""
    pattern = re.compile(rf"^{re.escape(TEMP_PREFIX)}(\d+)-")

    def stale(name: str) -> bool:
        match = pattern.match(name)
        if not match or int(match.group(1)) == os.getpid():
            return False
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    removed = remove_stale_cgroups(TEMP_PREFIX, stale)
    for path in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        with contextlib.suppress(OSError):
            if os.lstat(path).st_uid != os.getuid():
                continue  # only the grader's own (a child may plant look-alikes)
        if stale(path.name):
            if path.is_dir() and not path.is_symlink():
                _remove(path)
            else:
                path.unlink(missing_ok=True)
            removed += 1
    return removed
