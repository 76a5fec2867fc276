"""A seccomp filter: system calls that a process and everything it starts may never make again.

Under ``user`` isolation (a root grader where user namespaces are blocked, as on Gradescope) the
sandboxed child shares the machine's network. Before it execs, the child installs
:data:`NO_NETWORK`, which refuses the calls that make a socket (``socket``, ``socketpair``) and
``io_uring_setup`` (io_uring can open and connect sockets without a system call the filter would
see), and the calls that reach into another process (``ptrace``, ``process_vm_readv`` and
``_writev``, ``pidfd_getfd``): a process of the same user without the filter (none is started,
but a filter is no place to assume it) could otherwise be made to open a socket for it. It also
refuses what would keep data for the child's user past its run, beyond the files and System V IPC
the grader removes: the kernel's keyrings (``add_key``, ``request_key``, ``keyctl``) and POSIX
message queues (``mq_open``), through which the scored run could hand the hidden inputs to a later
run whose outputs a student reads (another bundle's). Under namespaces the child installs that part
alone, :data:`NO_KEPT_STATE`: there it would share the grader's session keyring. The child needs
none of these: Keras loads and predicts without them. A filter needs no privilege (``no_new_privs``
is set first), works under Docker's default seccomp profile, is inherited by every process the child
starts and survives ``exec``; no process can remove it.

Why seccomp and not Landlock: Landlock's network rules (kernel 6.7+) cover TCP only, so UDP and
unix sockets would stay open, and Gradescope's kernels are not all that recent. Why not the
``pyseccomp`` package: it needs libseccomp on the machine; the filter below is a dozen BPF
instructions, written out here so that a reader can check each one.

The program, for each system call (``seccomp_data``: the call's number, its architecture, its arguments):

    the architecture is not this machine's native one (i386)       -> kill the process
    an x32 call (x86-64 numbers with bit 30 set)                   -> fail with ENOSYS
    the call is in the rule list (and its first argument has a flag of the rule's mask, if any)
                                                                   -> fail with the rule's errno
    anything else                                                  -> allow

:data:`CONTAINER` is the other use: the Gradescope self-check (:mod:`autograder.gradescope_check`)
installs it around ``run_autograder`` so that, as in Docker's default profile, no namespace can be
made or entered and nothing can be mounted.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import struct
import subprocess
import sys
from dataclasses import dataclass

# BPF instructions (linux/filter.h, linux/bpf_common.h) and seccomp's return values (linux/seccomp.h).
LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS: A = the 32-bit word at offset k of seccomp_data
JUMP_IF_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_IF_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JUMP_IF_ANY_BIT = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K
KILL_PROCESS = 0x80000000
FAIL_WITH = 0x00050000  # SECCOMP_RET_ERRNO | errno
ALLOW = 0x7FFF0000
# Offsets in struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
NR, ARCH, FIRST_ARGUMENT = 0, 4, 16  # the first argument's low 32 bits (little-endian machines)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
X32_BIT = 0x40000000  # x86-64 calls with this bit set are the x32 ABI's: another table, refused

# Per machine: the AUDIT_ARCH value seccomp reports, and the numbers of the calls the rules name.
ARCHITECTURES = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "socketpair": 53,
            "io_uring_setup": 425,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "pidfd_getfd": 438,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "clone": 56,
            "clone3": 435,
            "sched_setaffinity": 203,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "mq_open": 240,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "socketpair": 199,
            "io_uring_setup": 425,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "pidfd_getfd": 438,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "clone": 220,
            "clone3": 435,
            "sched_setaffinity": 122,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "mq_open": 180,
        },
    ),
}
# clone()'s flags that make a new namespace (linux/sched.h): NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER,
# NEWPID, NEWNET.
NEW_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000


@dataclass(frozen=True)
class Rule:
    call: str
    errno: int
    when_flags: int = 0  # 0: always; else only when the first argument has one of these bits


# Nothing kept outside files and System V IPC (which the grader removes after each run), where a later run
# could find what a run left: the kernel's keyrings, POSIX message queues. Under namespaces too: a child there
# shares the grader's session keyring, and its user's.
NO_KEPT_STATE = (
    Rule("add_key", errno.EPERM),
    Rule("request_key", errno.EPERM),
    Rule("keyctl", errno.EPERM),
    Rule("mq_open", errno.EPERM),
)
NO_NETWORK = (
    Rule("socket", errno.EACCES),
    Rule("socketpair", errno.EACCES),
    Rule("io_uring_setup", errno.EACCES),
    # and no way into a process of the same user that has no filter, or into its descriptors
    Rule("ptrace", errno.EPERM),
    Rule("process_vm_readv", errno.EPERM),
    Rule("process_vm_writev", errno.EPERM),
    Rule("pidfd_getfd", errno.EPERM),
    # nor out of the cores it was pinned to where no cgroup holds its CPU share (autograder.sandbox)
    Rule("sched_setaffinity", errno.EPERM),
    # nor anything kept outside the run (below)
    *NO_KEPT_STATE,
)
CONTAINER = (
    Rule("unshare", errno.EPERM),
    Rule("setns", errno.EPERM),
    Rule("mount", errno.EPERM),
    Rule("umount2", errno.EPERM),
    Rule("pivot_root", errno.EPERM),
    Rule("clone", errno.EPERM, NEW_NAMESPACE_FLAGS),
    Rule("clone3", errno.ENOSYS),
)  # Docker's answer: the C library falls back to clone()


def _instruction(code: int, k: int, jump_if_true: int = 0, jump_if_false: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jump_if_true, jump_if_false, k)


def program(rules: tuple[Rule, ...], machine: str | None = None) -> bytes:
    """The BPF program for ``rules`` on ``machine`` (this one's by default); ValueError where it has no
    table."""
    machine = machine or platform.machine()
    if machine not in ARCHITECTURES:
        raise ValueError(f"no seccomp table for {machine}")
    arch, numbers = ARCHITECTURES[machine]
    code = [
        _instruction(LOAD_WORD, ARCH),
        _instruction(JUMP_IF_EQUAL, arch, 1, 0),
        _instruction(RETURN, KILL_PROCESS),
        _instruction(LOAD_WORD, NR),
    ]
    if machine == "x86_64":
        code += [
            _instruction(JUMP_IF_AT_LEAST, X32_BIT, 0, 1),
            _instruction(RETURN, FAIL_WITH | errno.ENOSYS),
        ]
    for rule in rules:
        refuse = _instruction(RETURN, FAIL_WITH | rule.errno)
        if not rule.when_flags:
            code += [_instruction(JUMP_IF_EQUAL, numbers[rule.call], 0, 1), refuse]
        else:  # this call, decided here: refused with one of the flags, allowed without
            code += [
                _instruction(JUMP_IF_EQUAL, numbers[rule.call], 0, 4),
                _instruction(LOAD_WORD, FIRST_ARGUMENT),
                _instruction(JUMP_IF_ANY_BIT, rule.when_flags, 0, 1),
                refuse,
                _instruction(RETURN, ALLOW),
            ]
    return b"".join(code + [_instruction(RETURN, ALLOW)])


class _Program(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Filter:
    """A filter prepared in the parent, installed in a child between fork and exec (:meth:`install`)."""

    def __init__(self, rules: tuple[Rule, ...]):
        code = program(rules)
        self._buffer = ctypes.create_string_buffer(code, len(code))
        self._program = _Program(len(code) // 8, ctypes.addressof(self._buffer))
        self._prctl = ctypes.CDLL(None, use_errno=True).prctl
        self._prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]

    def install(self) -> None:
        """Install the filter on the calling process (and so on everything it starts); OSError if refused."""
        self._call(PR_SET_NO_NEW_PRIVS, 1, None)  # no setuid program can gain back what the filter takes
        self._call(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(self._program))

    def _call(self, option: int, value: int, pointer) -> None:
        if self._prctl(option, value, pointer, 0, 0) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"prctl({option}): {os.strerror(number)}")


@functools.lru_cache(maxsize=None)
def prepared(rules: tuple[Rule, ...]) -> Filter | None:
    """``rules`` as a :class:`Filter`, or None where this machine cannot have one (not Linux, no table)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return Filter(rules)
    except (ValueError, OSError, AttributeError):
        return None


_PROBE = (
    "import socket, sys\n"
    "try:\n    socket.socket(socket.AF_INET, socket.SOCK_STREAM)\nexcept PermissionError:\n    sys.exit(0)\n"
    "sys.exit(3)"
)


@functools.lru_cache(maxsize=1)
def network_filter_works() -> bool:
    """Whether a child here can be started with :data:`NO_NETWORK` installed, and is then refused a socket."""
    cut = prepared(NO_NETWORK)
    if cut is None:
        return False
    try:
        return (
            subprocess.run(
                [sys.executable, "-c", _PROBE], preexec_fn=cut.install, capture_output=True, timeout=60
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False
