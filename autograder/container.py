"""The memory the grader's own machine allows it, and whether the kernel killed one of its processes for
memory.

On Gradescope the grader runs in a container with a memory limit (768 MB by default), enforced
by the container's memory cgroup: when the grader and its sandboxed child together need more,
the kernel kills one of them outright (SIGKILL), and nothing in the process says why. The
cgroup counts those kills, so the sandbox reads the count before and after a child runs
(:func:`oom_kills`) and tells an instructor which setting to raise instead of reporting a crash.
A container only a little too small may kill nothing: the run thrashes, reading back what was pushed
out, until a time limit stops it. The cgroup counts that memory too (:func:`refaulted_mb`), and the sandbox
tells the instructor when a timeout may have been the machine's.
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
PAGE = os.sysconf("SC_PAGE_SIZE")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _counts(text: str) -> dict[str, int]:
    """The ``name value`` lines of a cgroup file (memory.events, memory.oom_control, memory.stat)."""
    counts = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            counts[key] = int(value)
    return counts


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


def _limiting_cgroup() -> tuple[Path, int] | None:
    """The folder of this process's memory cgroup with the tightest limit, and that limit in bytes; None
    where no limit is set."""
    tightest = None
    for folder in _own_memory_cgroups():
        for name in ("memory.max", "memory.limit_in_bytes"):
            value = _read(folder / name).strip()
            if value.isdigit() and int(value) < UNLIMITED and (tightest is None or int(value) < tightest[1]):
                tightest = (folder, int(value))
    return tightest


def memory_limit_mb() -> int | None:
    """The tightest memory limit on this process's cgroups, in MB, or None where there is none."""
    tightest = _limiting_cgroup()
    return tightest[1] >> 20 if tightest else None


def _refaulted_pages(memory_stat: str) -> int:
    """The pages a cgroup's memory.stat says were read back in after they had been evicted. cgroup v1 counts
    the cgroup and those below it in ``total_workingset_refault_*``, v2 in ``workingset_refault_*`` (before
    Linux 5.9, one ``workingset_refault``)."""
    counts = _counts(memory_stat)
    prefix = "total_" if "total_workingset_refault_file" in counts else ""
    split = [f"{prefix}workingset_refault_{kind}" for kind in ("anon", "file")]
    if not any(name in counts for name in split):
        return counts.get("workingset_refault", 0)
    return sum(counts.get(name, 0) for name in split)


def refaulted_mb() -> float:
    """How much memory the kernel has read back in for the cgroup that holds this process's memory limit, in
    MB, after it had been evicted (by this cgroup or another); 0 where there is no limit or no count.

    A container too small for what runs in it evicts the pages of TensorFlow's libraries and its files,
    and reads them back at once: the run thrashes, slowly, and the kernel kills nothing. A run that read
    back more than the container holds may not have fitted in it.

    A hint, not a measure: the kernel also counts a page another cgroup pushed out (a container before this
    one, reading the same image's files), and any process in the container can raise the count by reading
    files. cgroup v1 shows the counts from Linux 6.1; before, this is 0."""
    tightest = _limiting_cgroup()
    if tightest is None:
        return 0.0
    return _refaulted_pages(_read(tightest[0] / "memory.stat")) * PAGE / 2**20


# The words of the instructor's note on a run that may have thrashed (the sandbox's; gradescope-selfcheck
# shows the lines that hold them).
MACHINE_READ_BACK = "while the grading machine read back"


def _kills(text: str) -> int:
    """The ``oom_kill`` count of a cgroup's memory.events or memory.oom_control text (0 where it has none)."""
    return _counts(text).get("oom_kill", 0)


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
            with contextlib.suppress(OSError):  # no swap beyond the limit, as in a container without any
                if v2:
                    (folder / "memory.swap.max").write_text("0")
                else:
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
