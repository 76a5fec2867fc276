"""The memory the grader's own machine allows it, and whether the kernel killed one of its processes for
memory.

On Gradescope the grader runs in a container with a memory limit (768 MB by default), enforced
by the container's memory cgroup: when the grader and its sandboxed child together need more,
the kernel kills one of them outright (SIGKILL), and nothing in the process says why. The
cgroup counts those kills, so the sandbox reads the count before and after a child runs
(:func:`oom_kills`) and tells an instructor which setting to raise instead of reporting a crash.
Where no limit is set or the files cannot be read, these functions return None and 0.
:class:`MemoryCgroup` makes such a limit on this machine, to run the package under it.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a number near 2**63


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _own_memory_cgroups(proc_cgroup: str | None = None) -> list[Path]:
    """The folders of this process's memory cgroup and of its ancestors, innermost first."""
    text = _read(Path("/proc/self/cgroup")) if proc_cgroup is None else proc_cgroup
    for line in text.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "memory" in controllers.split(","):
            base = CGROUP_ROOT / "memory"  # cgroup v1
        elif number == "0" and controllers == "" and (CGROUP_ROOT / "cgroup.controllers").is_file():
            base = CGROUP_ROOT  # cgroup v2 (in a container: its own root)
        else:
            continue
        folder = base / path.strip().lstrip("/")
        folders = [f for f in (folder, *folder.parents) if (f == base or base in f.parents) and f.is_dir()]
        return folders  # a container that sees only its own cgroup sees it at ``base``
    return []


def memory_limit_mb() -> int | None:
    """The tightest memory limit on this process's cgroups, in MB, or None where there is none."""
    limits = []
    for folder in _own_memory_cgroups():
        for name in ("memory.max", "memory.limit_in_bytes"):
            value = _read(folder / name).strip()
            if value.isdigit() and int(value) < UNLIMITED:
                limits.append(int(value) >> 20)
    return min(limits) if limits else None


def _kills(text: str) -> int:
    """The ``oom_kill`` count of a cgroup's memory.events or memory.oom_control text (0 where it has none)."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0


def oom_kills() -> int:
    """How many processes the kernel has killed for memory in this process's cgroups (0 where it cannot
    tell)."""
    return sum(
        _kills(_read(folder / name))
        for folder in _own_memory_cgroups()
        for name in ("memory.events.local", "memory.oom_control")  # v2 (this cgroup only), v1
    )


GRADESCOPE_DEFAULT_MB = 768  # a Gradescope container's memory unless the assignment's settings raise it


def suggested_memory_mb(limit_mb: int | None) -> int:
    """What to raise the machine's memory to after an out-of-memory kill: twice its limit (Gradescope's
    default, 768 MB, becomes 1,536 MB) and never less than that default, or 1,536 MB where the limit is
    unknown."""
    return max(2 * limit_mb, GRADESCOPE_DEFAULT_MB) if limit_mb else 2 * GRADESCOPE_DEFAULT_MB


def out_of_memory_line(limit_mb: int | None) -> str:
    """The one line a Gradescope run reports when the machine's memory ran out."""
    return f"out of memory: raise the autograder's memory to {suggested_memory_mb(limit_mb)} MB"


class MemoryCgroup:
    """A memory cgroup below this process's own (cgroup v1 or v2) with a limit: a container's memory, here.

    ``gradescope-selfcheck --memory`` and ``benchmarks/gradescope_limits.py`` run ``run_autograder`` in one,
    as Gradescope runs it in its container: the grader and its child share the limit, and the kernel kills
    one of them when they need more."""

    def __init__(self, folder: Path, v2: bool):
        self.folder, self.v2 = folder, v2

    @classmethod
    def create(cls, limit_mb: int) -> "MemoryCgroup | None":
        own = _own_memory_cgroups()
        if not own:
            return None
        v2 = (own[0] / "memory.max").exists() or (own[0] / "cgroup.controllers").exists()
        folder = own[0] / f"attention-lab-container-{os.getpid()}-{time.monotonic_ns()}"
        try:
            folder.mkdir()
            (folder / ("memory.max" if v2 else "memory.limit_in_bytes")).write_text(str(limit_mb << 20))
            if not v2:
                with contextlib.suppress(OSError):
                    (folder / "memory.memsw.limit_in_bytes").write_text(str(limit_mb << 20))
        except OSError:
            with contextlib.suppress(OSError):
                folder.rmdir()
            return None
        return cls(folder, v2)

    def join(self) -> None:
        """Moves the calling process into the cgroup: a ``preexec_fn``, called in the new process before it
        execs."""
        fd = os.open(self.folder / "cgroup.procs", os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)

    def peak_mb(self) -> float | None:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        with contextlib.suppress(OSError, ValueError):
            return round(int((self.folder / name).read_text()) / 2**20, 1)
        return None

    def oom_kills(self) -> int:
        return _kills(_read(self.folder / ("memory.events" if self.v2 else "memory.oom_control")))

    def remove(self) -> None:
        """Removes the cgroup once its processes are gone (it waits up to 5 s for them); gone already is
        done."""
        for _ in range(50):
            try:
                self.folder.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
