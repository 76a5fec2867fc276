"""Run :mod:`autograder.child` on one bundle in a separate, limited process.

The child gets a fresh temporary folder holding only the model, its vocabularies, the job (the
hidden *inputs*) and, where allowed, ``custom_layers.py``; a minimal environment; limits on
address space (memory), CPU time, file size and wall time. Where the OS allows (Linux with user
namespaces, checked once), it also runs with no network, with the grader's folders (hidden set,
other submissions, grades) hidden behind empty mounts, and with every file system read-only
except its own folder, so that code in a student's ``custom_layers.py`` can neither read the
hidden targets or another student's work nor change anything outside its folder. The whole process
group is killed when time runs out. The result comes back as JSON, read with a size bound, never
pickle.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

KIT_ROOT = Path(__file__).resolve().parents[1]
MAX_RESULT_BYTES = 50_000_000
MEMORY_HINTS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "OOM", "out of memory",
                "Unable to allocate", "failed to allocate")


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 300
    cpu_seconds: int = 900
    memory_mb: int = 4096
    file_mb: int = 200


@dataclass
class SandboxResult:
    status: str          # "ok", or a failure status (timeout, out-of-memory, crashed, and the child's own)
    message: str
    data: dict           # the child's result.json (empty on failure)
    seconds: float       # wall time of the child


UNSHARE = ["unshare", "--net", "--mount", "--map-root-user"]
# In the new mount namespace: $1 is the child's folder, then come the folders to hide, up to "--",
# then the command. Each hidden folder gets an empty tmpfs over it; the child's folder becomes a
# mount of its own; then every other mount (mountinfo's 5th field, octal escapes decoded) is made
# read-only, and the command runs.
_ISOLATE_THEN_EXEC = r'''
work=$1; shift
while [ "$1" != "--" ]; do mount -t tmpfs none "$1" || exit 97; shift; done; shift
mount --bind "$work" "$work" || exit 97
awk '{print $5}' /proc/self/mountinfo | while read -r point; do
    point=$(printf '%b' "$point")
    [ "$point" = "$work" ] || mount -o remount,bind,ro "$point" 2>/dev/null
done
exec "$@"
'''


@functools.lru_cache(maxsize=1)
def isolation_available() -> bool:
    """Whether this machine can run the child without network and with folders hidden (``unshare``)."""
    if shutil.which("unshare") is None:
        return False
    work, hidden = (tempfile.mkdtemp(prefix="attention-lab-probe-") for _ in range(2))
    try:   # the whole script: a folder hidden, the child's folder kept writable, the rest read-only
        return subprocess.run([*UNSHARE, "sh", "-c", _ISOLATE_THEN_EXEC, "probe", work, hidden, "--", "true"],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        os.rmdir(work)
        os.rmdir(hidden)


def _command(work: Path, hide: list[Path]) -> list[str]:
    child = [sys.executable, "-m", "autograder.child"]
    if not isolation_available():
        return child
    keep = [KIT_ROOT.resolve(), Path(sys.executable).resolve(), work.resolve()]
    folders = [str(p) for p in {Path(h).resolve() for h in hide}
               if p.is_dir() and not any(p == k or p in k.parents for k in keep)]
    return [*UNSHARE, "sh", "-c", _ISOLATE_THEN_EXEC, "sandbox", str(work.resolve()), *sorted(folders), "--", *child]


def _set_limits(limits: Limits) -> None:
    """In the child, before exec: the resource limits (the kernel enforces them)."""
    import resource

    memory = limits.memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20, limits.file_mb << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _environment(home: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(KIT_ROOT), "HOME": str(home),
           "TMPDIR": str(home),   # the only place it can write
           "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
           "MPLBACKEND": "Agg", "PYTHAINLP_OFFLINE": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "TF_NUM_INTEROP_THREADS": "1", "TF_NUM_INTRAOP_THREADS": os.environ.get("TF_NUM_INTRAOP_THREADS", "1")}
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return env


def _failure_from_exit(code: int, stderr: str, limits: Limits) -> tuple[str, str]:
    if code in (-signal.SIGXCPU, -signal.SIGKILL) and "Killed" not in stderr:
        return "timeout", f"the model used more than {limits.cpu_seconds} s of CPU time"
    if any(hint in stderr for hint in MEMORY_HINTS) or code in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS):
        return "out-of-memory", f"the model ran out of memory (limit {limits.memory_mb} MB) or crashed"
    last = stderr.strip().splitlines()[-1][:300] if stderr.strip() else f"exit status {code}"
    return "crashed", f"the grading process stopped unexpectedly: {last}"


def run_child(files: dict[str, Path], job: dict, limits: Limits, hide: list[Path] = ()) -> SandboxResult:
    """Run the child on ``files`` (name in the sandbox -> path to copy) with ``job``; return its outcome.

    ``hide``: folders the child must not see (where isolation is available).
    """
    with tempfile.TemporaryDirectory(prefix="attention-lab-sandbox-") as scratch:
        folder = Path(scratch)
        for name, path in files.items():
            shutil.copyfile(path, folder / name)
        (folder / "job.json").write_text(json.dumps(job), encoding="utf-8")
        command = _command(folder, list(hide))
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=folder, env=_environment(folder), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=functools.partial(_set_limits, limits), start_new_session=True)
        try:
            _, stderr = process.communicate(timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return SandboxResult("timeout", f"loading and running the model took longer than "
                                            f"{limits.wall_seconds:.0f} s", {}, time.perf_counter() - started)
        seconds = time.perf_counter() - started
        result_path = folder / "result.json"
        if result_path.is_file() and result_path.stat().st_size <= MAX_RESULT_BYTES:
            try:
                data = json.loads(result_path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                data = {}
            if isinstance(data, dict) and data.get("status") == "ok":
                return SandboxResult("ok", "", data, seconds)
            if isinstance(data, dict) and isinstance(data.get("status"), str):
                return SandboxResult(data["status"], str(data.get("message", ""))[:1000], {}, seconds)
        status, message = _failure_from_exit(process.returncode, stderr or "", limits)
        return SandboxResult(status, message, {}, seconds)
