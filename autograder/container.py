"""The memory the grader's own machine allows it, and whether the kernel killed one of its processes for
memory.

On Gradescope the grader runs in a container with a memory limit (768 MB by default), enforced
by the container's memory cgroup: when the grader and its sandboxed child together need more,
the kernel kills one of them outright (SIGKILL), and nothing in the process says why. The
cgroup counts those kills, so the sandbox reads the count before and after a child runs
(:func:`oom_kills`) and tells an instructor which setting to raise instead of reporting a crash.
Where no limit is set or the files cannot be read, these functions return None and 0.
"""

from __future__ import annotations

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


def oom_kills() -> int:
    """How many processes the kernel has killed for memory in this process's cgroups (0 where it cannot
    tell)."""
    total = 0
    for folder in _own_memory_cgroups():
        for name in ("memory.events.local", "memory.oom_control"):  # v2 (this cgroup only), v1
            for line in _read(folder / name).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    total += int(value)
    return total


def suggested_memory_mb(limit_mb: int | None) -> int:
    """What to raise the machine's memory to after an out-of-memory kill: twice its limit (Gradescope's
    default, 768 MB, becomes 1,536 MB), or 1,536 MB where the limit is unknown."""
    return 2 * limit_mb if limit_mb else 1536


def out_of_memory_line(limit_mb: int | None) -> str:
    """The one line a Gradescope run reports when the machine's memory ran out."""
    return f"out of memory: raise the autograder's memory to {suggested_memory_mb(limit_mb)} MB"
