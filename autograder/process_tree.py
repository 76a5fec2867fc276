"""The sandboxed child's process tree: find every process in it, measure it, limit it, kill it.

A student's code may fork, double-fork into a daemon, or start many processes that each stay
under the per-process limits. So the grader treats everything the child starts as one tree:

- **A cgroup**, where the grader may create one (the v1 ``pids`` and ``memory`` hierarchies, or
  a v2 cgroup whose controllers are delegated to the grader): the kernel caps the tree's tasks
  (processes and threads) and its memory, and lists its members wherever they went. Where the
  ``cpu`` controller comes too (v1 ``cpu``, v2 ``cpu`` delegated), a CPU quota holds the whole
  tree to its share of the cores, however many processes or sessions it starts; the cgroup's
  CPU usage (v1 ``cpuacct``, v2 ``cpu.stat``) is the tree's CPU time.
- **Otherwise the tree is found** by what the sandbox gave it: the descendants of the process
  the grader started (in a PID namespace an orphan is adopted by the namespace's first process,
  so nothing leaves that line; a nested namespace stays inside it), every process of its user
  id (user isolation), or its descendants and its session (no isolation); and a watchdog
  enforces the same two limits by polling, counting both resident memory and memory held in
  files that only a descriptor keeps (``memfd_create``, deleted temporary files), and adds up
  the tree's CPU time from ``/proc`` (:class:`CpuLedger`). A tree of its
  own user also holds what that user wrote where every user may write (:data:`SCRATCH`:
  ``/dev/shm`` is memory, and so is ``/tmp`` in a container) and its System V shared memory:
  the watchdog counts those too, and :func:`remove_owned_by` and :func:`remove_ipc_of` clear
  them after the run.

Either way the watchdog records the tree's peak memory and its CPU time, and :meth:`ProcessTree.kill` kills
every member, again and again, until none is left. It is called on every exit, not only on a timeout, so
nothing a bundle starts outlives its run."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

# _kill_all_of forks the grader, whose pool has threads, to make os calls only: Python 3.12 and later warn of
# such a fork ("... is multi-threaded, use of fork() may lead to deadlocks in the child"). The filter is set
# once, here: a catch_warnings around each fork swapped the process's filters under the other threads' feet.
warnings.filterwarnings(
    "ignore",
    message=r".*multi-threaded, use of fork\(\)",
    category=DeprecationWarning,
    module=re.escape(__name__),
)

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")  # /proc/<pid>/stat counts CPU time in these
CGROUP_ROOT = Path("/sys/fs/cgroup")
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # where any user may write (those that exist)
ENTRY_BYTES = 4096  # what a file or folder holds beyond its data (inode, directory entry), rounded up
# /proc/sysvipc/<kind> -> the column of an object's id, and ipcrm's option for that kind
SYSV_IPC = {"shm": ("shmid", "-m"), "msg": ("msqid", "-q"), "sem": ("semid", "-s")}


@dataclass(frozen=True)
class TreeLimits:
    memory_bytes: int
    tasks: int  # processes and threads together, as the kernel counts them
    cpus: float | None = None  # cores the tree may use at once (a CPU quota); None: no quota


@dataclass(frozen=True)
class Usage:
    """What the tree holds and has used: memory now, tasks now, CPU time since it started (every process and
    thread, those that ended too)."""

    memory_bytes: int
    tasks: int
    cpu_seconds: float


def _read(path: Path | str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _status_field(pid: int, field: str) -> str:
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def _session(pid: int) -> int | None:
    stat = _read(f"/proc/{pid}/stat")
    try:  # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses
        return int(stat.rsplit(")", 1)[1].split()[3])
    except (IndexError, ValueError):
        return None


def _cpu_times(pid: int) -> tuple[int, int, int] | None:
    """``(parent, start time, ticks)`` of ``pid``: ticks are the CPU time of all its threads and of the
    children it waited for (theirs include their own children's), or None where it is gone."""
    try:  # after "pid (comm)": state ppid ... utime(11) stime(12) cutime(13) cstime(14) ... starttime(19)
        fields = _read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
        return int(fields[1]), int(fields[19]), sum(int(f) for f in fields[11:15])
    except (IndexError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    """Every thread's children of ``pid``."""
    children = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for thread in threads:
        children += [int(p) for p in _read(f"/proc/{pid}/task/{thread}/children").split()]
    return children


def _descendants(root: int) -> set[int]:
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found and os.path.exists(f"/proc/{pid}"):
            found.add(pid)
            todo += _children(pid)
    return found


def _held_in_files(pid: int, seen: set) -> int:
    """Bytes of files that only ``pid``'s descriptors or mappings keep alive (memfds, deleted files): memory
    that RSS misses (a mapping's untouched pages). ``seen``: the files counted already, across the tree."""
    total = 0
    for table in ("fd", "map_files"):  # map_files: the files mapped into memory (readable by root)
        try:
            entries = os.listdir(f"/proc/{pid}/{table}")
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                info = os.stat(f"/proc/{pid}/{table}/{entry}")
                if (
                    stat.S_ISREG(info.st_mode)
                    and info.st_nlink == 0
                    and (info.st_dev, info.st_ino) not in seen
                ):
                    seen.add((info.st_dev, info.st_ino))
                    total += info.st_blocks * 512
    return total


def _owned_entries(uid: int, roots) -> tuple[list[tuple[str, os.stat_result]], bool]:
    """Every file and folder of ``uid`` under ``roots``, outermost first, and whether a folder was too deep to
    walk by path (over PATH_MAX); links are never followed.

    Only folders ``uid`` may write in are walked (its own, and those every user may write in): no
    other folder can hold anything new of its.
    """
    found, seen, todo, too_deep = [], set(), [], False
    for root in roots:
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(root).st_mode):
                todo.append(os.path.realpath(root))
    walked = set()
    while todo:
        folder = todo.pop()
        if folder in walked:
            continue
        walked.add(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError as error:
            too_deep = too_deep or error.errno in (errno.ENAMETOOLONG, errno.ELOOP)
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid == uid and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                found.append((entry.path, info))
            if stat.S_ISDIR(info.st_mode) and (info.st_uid == uid or info.st_mode & 0o002):
                todo.append(entry.path)
    return sorted(found, key=lambda item: item[0].count(os.sep)), too_deep


def bytes_owned_by(uid: int, roots) -> int:
    """What ``uid``'s files and folders under ``roots`` hold: their blocks, and a page for each entry (a tree
    too deep to walk counts as more than any limit)."""
    entries, too_deep = _owned_entries(uid, roots)
    return 1 << 62 if too_deep else sum(ENTRY_BYTES + info.st_blocks * 512 for _, info in entries)


def remove_owned_by(uid: int, roots) -> None:
    """Remove every file and folder of ``uid`` under ``roots``, once no process of ``uid`` is left to move
    them.

    Each outermost one goes whole (a folder by ``shutil.rmtree``, which works through descriptors and never
    follows a link; ``rm -rf`` past its recursion limit), so no path is walked twice."""
    if survivors(uid):
        return
    removed: list[str] = []
    for path, info in _owned_entries(uid, roots)[0]:
        if any(path.startswith(folder + os.sep) for folder in removed):
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(info.st_mode):
                removed.append(path)
                try:
                    shutil.rmtree(path)
                except (OSError, RecursionError):
                    subprocess.run(
                        ["rm", "-rf", "--one-file-system", "--", path],
                        check=False,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
            else:
                os.unlink(path)


def _ipc_objects(uid: int) -> list[tuple[str, int, int]]:
    """``(kind, id, bytes)`` of ``uid``'s System V IPC objects (bytes: a shared memory segment's size)."""
    found = []
    for kind, (id_column, _) in SYSV_IPC.items():
        lines = _read(f"/proc/sysvipc/{kind}").splitlines()
        if not lines:
            continue
        columns = lines[0].split()
        for line in lines[1:]:
            row = dict(zip(columns, line.split()))
            if str(uid) in (row.get("uid"), row.get("cuid")):  # the creator's id cannot be changed
                size = int(row.get("size", 0)) if kind == "shm" else 0
                found.append((kind, int(row.get(id_column, -1)), size))
    return found


def remove_ipc_of(uid: int) -> None:
    """Remove ``uid``'s shared memory segments, semaphores and message queues (they outlive their
    processes)."""
    for kind, number, _ in _ipc_objects(uid):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["ipcrm", SYSV_IPC[kind][1], str(number)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
            )


class CpuLedger:
    """The CPU time of a tree counted from ``/proc``, where no cgroup counts it.

    Each poll adds up, over the tree's processes, their own time and that of the children they waited for (a
    process that ended and was waited for by one of the tree is in its parent's count from then on). A process
    that ended after it had left the tree's line (an orphan that another process, outside the tree, waited
    for) keeps the time last seen for it. What a process used between the last poll and its end is missed only
    when it was not waited for inside the tree: at most a poll's worth (0.1 s) per such process. The count
    never goes down."""

    def __init__(self):
        self._last: dict[tuple[int, int], tuple[int, int]] = {}  # (pid, start) -> (parent, ticks) last seen
        self._departed = 0  # ticks of processes that ended outside the tree's line
        self.seconds = 0.0

    def update(self, pids: list[int]) -> float:
        now = {}
        for pid in pids:
            times = _cpu_times(pid)
            if times is not None:
                parent, start, ticks = times
                now[(pid, start)] = (parent, ticks)
        alive = {pid for pid, _ in now}
        for key, (parent, ticks) in self._last.items():
            if key not in now and parent not in alive:
                self._departed += ticks
        self._last = now
        self.seconds = max(self.seconds, (self._departed + sum(t for _, t in now.values())) / TICKS)
        return self.seconds


class Cgroup:
    """A cgroup of the grader's own, capping tasks and memory for one child's tree, and its CPU where it
    may."""

    def __init__(self, folders: dict[str, Path], version: int, cpu_quota: bool = False):
        self.folders = folders  # controller ("pids", "memory", "cpu", "cpuacct", or "" for v2) -> folder
        self.version = version
        self.cpu_quota = cpu_quota  # whether the kernel holds the tree to its share of the cores

    @classmethod
    def create(cls, name: str, limits: TreeLimits) -> "Cgroup | None":
        """A new cgroup ``name`` with ``limits``, or None where this machine lets the grader make none."""
        for make in (cls._create_v1, cls._create_v2):
            with contextlib.suppress(OSError, ValueError):
                group = make(name, limits)
                if group is not None:
                    return group
        return None

    @classmethod
    def _create_v1(cls, name: str, limits: TreeLimits) -> "Cgroup | None":
        parents = {c: CGROUP_ROOT / c for c in ("pids", "memory")}
        if not all((p / "cgroup.procs").is_file() and os.access(p, os.W_OK) for p in parents.values()):
            return None
        folders = {}
        try:
            for controller, parent in parents.items():
                folders[controller] = parent / name
                folders[controller].mkdir()
            (folders["pids"] / "pids.max").write_text(str(limits.tasks))
            (folders["memory"] / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
            with contextlib.suppress(OSError):  # no swap to escape to, where the kernel accounts it
                (folders["memory"] / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
        except OSError:
            cls(folders, 1).remove()
            raise
        quota = False
        # The CPU usage, and the quota where one is asked for: each where the grader may (often one
        # "cpu,cpuacct").
        for controller in ("cpuacct", "cpu") if limits.cpus else ("cpuacct",):
            parent = CGROUP_ROOT / controller
            if not ((parent / "cgroup.procs").is_file() and os.access(parent, os.W_OK)):
                continue
            folder = parent / name
            with contextlib.suppress(OSError):
                if not any(folder.resolve() == f.resolve() for f in folders.values()):
                    folder.mkdir()
                folders[controller] = folder
                if controller == "cpu" and limits.cpus:
                    period = int(_read(folder / "cpu.cfs_period_us").strip() or 100_000)
                    (folder / "cpu.cfs_quota_us").write_text(str(max(1000, round(limits.cpus * period))))
                    quota = True
        return cls(folders, 1, quota)

    @classmethod
    def _create_v2(cls, name: str, limits: TreeLimits) -> "Cgroup | None":
        if not (CGROUP_ROOT / "cgroup.controllers").is_file():
            return None
        own = next(
            (line[3:] for line in _read("/proc/self/cgroup").splitlines() if line.startswith("0::")), None
        )
        if own is None:
            return None
        parent = CGROUP_ROOT / own.strip().lstrip("/")
        if not {"pids", "memory"} <= set(_read(parent / "cgroup.subtree_control").split()):
            return None  # the controllers are not delegated to the grader
        folder = parent / name
        folder.mkdir()
        try:
            (folder / "pids.max").write_text(str(limits.tasks))
            (folder / "memory.max").write_text(str(limits.memory_bytes))
            with contextlib.suppress(OSError):
                (folder / "memory.swap.max").write_text("0")
        except OSError:
            cls({"": folder}, 2).remove()
            raise
        quota = False
        if limits.cpus and "cpu" in _read(parent / "cgroup.subtree_control").split():
            with contextlib.suppress(OSError):
                period = 100_000
                (folder / "cpu.max").write_text(f"{max(1000, round(limits.cpus * period))} {period}")
                quota = True
        return cls({"": folder}, 2, quota)

    @property
    def procs_files(self) -> list[str]:
        """The files a process writes its pid into to join (before it execs anything)."""
        return list(dict.fromkeys(str(folder / "cgroup.procs") for folder in self.folders.values()))

    def cpu_seconds(self) -> float | None:
        """The CPU time of every process that was ever in the cgroup, or None where it does not count it."""
        if self.version == 2:
            counted = (self.folders[""] / "cpu.stat").is_file()
            return self._counter("", "cpu.stat", "usage_usec") / 1e6 if counted else None
        if "cpuacct" not in self.folders:
            return None
        text = _read(self.folders["cpuacct"] / "cpuacct.usage").strip()
        return int(text) / 1e9 if text.isdigit() else None

    def pids(self) -> list[int]:
        folder = next(iter(self.folders.values()))
        return [int(p) for p in _read(folder / "cgroup.procs").split()]

    def memory_bytes(self) -> int:
        if self.version == 1:
            text = _read(self.folders["memory"] / "memory.usage_in_bytes")
        else:
            text = _read(self.folders[""] / "memory.current")
        return int(text) if text.strip().isdigit() else 0

    def _counter(self, controller: str, file: str, key: str) -> int:
        for line in _read(self.folders[controller] / file).splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
                return int(parts[1])
        return 0

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a member for going over the memory limit."""
        if self.version == 1:
            return self._counter("memory", "memory.oom_control", "oom_kill") > 0
        return self._counter("", "memory.events", "oom_kill") > 0

    def refused_tasks(self) -> bool:
        """Whether a fork or a new thread was refused for going over the task limit."""
        return self._counter("pids" if self.version == 1 else "", "pids.events", "max") > 0

    def kill(self) -> None:
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.folders[""] / "cgroup.kill").write_text("1")
        for _ in range(200):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        for folder in self.folders.values():
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # members still exiting
                    time.sleep(0.02)


class ProcessTree:
    """Every process a sandboxed child started, however it left its parent.

    ``root``: the process the grader started. ``how``: ``"namespace"`` (its descendants),
    ``"user"`` (every process of ``uid``, and ``uid``'s files under the ``scratch`` folders) or
    ``"session"`` (its descendants and its session).
    """

    def __init__(
        self,
        root: int,
        how: str,
        *,
        uid: int | None = None,
        cgroup: Cgroup | None = None,
        scratch: tuple = (),
    ):
        self.root, self.how, self.uid, self.cgroup, self.scratch = root, how, uid, cgroup, scratch
        self.peak_memory_bytes = 0
        self.cpu_seconds = 0.0
        self._ledger = CpuLedger()

    def pids(self) -> list[int]:
        """The tree's processes now (thread-group leaders; their threads come with them)."""
        members = _descendants(self.root)
        if self.cgroup is not None:
            members |= set(self.cgroup.pids())
        if self.how == "user":
            members |= set(survivors(self.uid))
        elif self.how == "session":
            members |= {p for p in _all_pids() if _session(p) == self.root}
        return sorted(members)

    def measure(self) -> Usage:
        """The tree's memory and tasks now, and its CPU time so far; the peak memory and the CPU time are
        kept."""
        pids = self.pids()
        tasks = sum(int(_status_field(p, "Threads") or 0) for p in pids)
        if self.cgroup is not None:
            memory = self.cgroup.memory_bytes()
        else:
            memory, seen = 0, set()
            for pid in pids:
                fields = _read(f"/proc/{pid}/statm").split()
                memory += (int(fields[1]) * PAGE if len(fields) > 1 else 0) + _held_in_files(pid, seen)
            if self.how == "user":
                memory += bytes_owned_by(self.uid, self.scratch) + sum(
                    size for *_, size in _ipc_objects(self.uid)
                )
        self.peak_memory_bytes = max(self.peak_memory_bytes, memory)
        counted = self.cgroup.cpu_seconds() if self.cgroup is not None else None
        self.cpu_seconds = max(
            self.cpu_seconds, counted if counted is not None else self._ledger.update(pids)
        )
        return Usage(memory, tasks, self.cpu_seconds)

    def kill(self) -> None:
        """SIGKILL every member until none is left (members may fork while being killed)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.root, signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill()
        for _ in range(200):
            if self.how == "user":
                _kill_all_of(self.uid)
            others = [p for p in self.pids() if p != self.root]
            if not others:
                return
            for pid in others:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)


def _kill_all_of(uid: int) -> None:
    """``kill(-1, SIGKILL)`` as ``uid``: every process of that user at once (the kernel holds off forks
    meanwhile), where killing them one by one could be outrun by a process that forks and exits.

    A fork of the grader does it, with no ``exec``: no program of that user's that another of its
    processes could trace or write into before it kills.
    """
    pid = os.fork()
    if pid == 0:
        try:
            become(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that started it ends


def _prepared_prctl():
    """libc's prctl, loaded here, so that calling it between fork and exec loads nothing; None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return prctl


_PRCTL = _prepared_prctl()


def die_with(parent: int) -> None:
    """Be killed when the grader's thread that started this process ends: a run whose grader was killed (kill
    -9, a closed terminal, the kernel short of memory) would otherwise live on, asleep or holding its memory.
    Between fork and exec, after any change of user (which clears it); ``parent``: the grader's pid."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the grader died before the line above
        os._exit(1)


def become(uid: int) -> None:
    """Drop root for ``uid`` (its own group, no others): the sandbox's user. Only os calls: safe between fork
    and exec."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def survivors(uid: int) -> list[int]:
    """The processes of ``uid`` still running (not zombies)."""
    return [
        p
        for p in _all_pids()
        if _status_field(p, "Uid").split()[:1] == [str(uid)] and not _status_field(p, "State").startswith("Z")
    ]


def remove_stale_cgroups(prefix: str, is_stale) -> int:
    """Remove the cgroups named ``prefix...`` for which ``is_stale(name)`` holds, killing what is left in
    them."""
    own = next(
        (
            line[3:].strip().lstrip("/")
            for line in _read("/proc/self/cgroup").splitlines()
            if line.startswith("0::")
        ),
        "",
    )
    parents = [CGROUP_ROOT / c for c in ("pids", "memory", "cpu", "cpuacct")] + [CGROUP_ROOT / own]
    removed = 0
    for parent in parents:
        with contextlib.suppress(OSError):
            for folder in parent.glob(f"{prefix}*"):
                if folder.is_dir() and is_stale(folder.name):
                    group = Cgroup({"": folder}, 2)
                    group.kill()
                    group.remove()
                    removed += not folder.exists()
    return removed
