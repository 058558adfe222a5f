"""Exec-time launcher: stages binds, sets rlimits, drops privileges and keyring, then execs."""

# This file runs as its own process (`python -I -S launcher.py SPEC`) between the worker and
# bwrap, so that everything here happens in a fresh single-threaded process: preexec_fn is not
# safe in a threaded worker, and setpriv/prlimit/keyctl binaries cannot join a keyring or stage
# binds. It imports only the standard library and must stay importable without site-packages.

import ctypes
import marshal
import os
import resource
import signal
import sys
from typing import Any, NoReturn

_CLONE_NEWNS = 0x00020000
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
_KEYCTL_JOIN_SESSION_KEYRING = 1
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
# keyctl has no glibc wrapper; the generic syscall table (arm64, riscv64) uses 219.
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219}
_EXIT_LAUNCH_FAILED = 127
# Step code runs at this scheduling niceness (0 is the default, 19 the lowest priority): on a
# shared machine one tenant's busy steps must not take the CPU the worker's own tasks, the API
# and other tenants' requests need (issue 35 §1). Without CAP_SYS_NICE, dropped below, the step
# cannot lower it again.
SANDBOX_NICE = 10


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _stage_binds(stage: dict[str, Any]) -> None:
    """Bind each source under the stage dir in a private mount namespace.

    bwrap resolves bind sources as the unprivileged sandbox user, so a source below a directory
    that user cannot traverse (a 0700 tmp dir, /root/.pyenv) would fail. Root binds them here,
    in a mount namespace private to this process and its bwrap child, so the host never sees them.
    """
    _check(_libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(_libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    target = os.fsencode(stage["dir"])
    _check(
        _libc.mount(b"tmpfs", target, b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=0755,size=64k"),
        f"mount tmpfs on {stage['dir']}",
    )
    for source, name in stage["binds"]:
        dest = os.path.join(stage["dir"], name)
        os.mkdir(dest, 0o755)
        _check(
            _libc.mount(os.fsencode(source), os.fsencode(dest), None, _MS_BIND | _MS_REC, None),
            f"bind {source}",
        )


def _set_rlimits(limits: list[list[Any]]) -> None:
    for name, soft, hard in limits:
        resource.setrlimit(getattr(resource, name), (soft, hard))


def _drop_privileges(uid: int, gid: int) -> None:
    """Become uid/gid with no capabilities and none obtainable again."""
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
        last_cap = int(f.read())
    for cap in range(last_cap + 1):
        _check(_libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    # Leaving uid 0 for all three ids clears the permitted, effective and ambient sets.
    os.setresuid(uid, uid, uid)
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "clear inheritable capabilities")


def _join_fresh_session_keyring() -> None:
    """Replace the inherited session keyring (the worker's keys) with a new anonymous one."""
    number = _SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"keyctl syscall number unknown on {os.uname().machine}")
    _libc.syscall.restype = ctypes.c_long
    if _libc.syscall(number, _KEYCTL_JOIN_SESSION_KEYRING, None) >= 0:
        return
    errno = ctypes.get_errno()
    # ENOSYS (no CONFIG_KEYS) or EPERM (a seccomp/LSM filter on keyctl): filters are inherited
    # by bwrap and the step, so the step cannot reach the inherited keyring either.
    if errno not in (38, 1):
        raise OSError(errno, f"keyctl(JOIN_SESSION_KEYRING): {os.strerror(errno)}")


def _json_value(value: Any) -> str:
    # `json` costs ~5 ms of import (it pulls in `re`) on every sandbox start; the report only
    # holds strings, ints and floats, which are written here exactly as JSON spells them.
    if isinstance(value, str):
        out = []
        for ch in value:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ord(ch) < 0x20:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _report(report_fd: int, **fields: Any) -> None:
    body = ",".join(f"{_json_value(k)}:{_json_value(v)}" for k, v in fields.items())
    os.write(report_fd, ("{" + body + "}\n").encode())


def _fail(report_fd: int, stage: str, exc: BaseException) -> NoReturn:
    _report(report_fd, error=stage, message=str(exc))
    os._exit(_EXIT_LAUNCH_FAILED)


def _prepare(spec: dict[str, Any]) -> None:
    if spec["stage"]:
        _stage_binds(spec["stage"])
    # Set while still root so hard limits can be anything; after the drop they only go down.
    _set_rlimits(spec["rlimits"])
    os.setpriority(os.PRIO_PROCESS, 0, max(SANDBOX_NICE, os.getpriority(os.PRIO_PROCESS, 0)))
    if spec["drop_to"]:
        _drop_privileges(*spec["drop_to"])
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    # After the drop, so the new keyring belongs to the sandbox user and not to root.
    _join_fresh_session_keyring()


def _die_with(parent: int) -> None:
    """SIGKILL this process when `parent` (the process that started it) dies.

    Set after the privilege drop, which clears it; if the parent died before it was set, this
    process is already someone else's child and leaves now.
    """
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(_EXIT_LAUNCH_FAILED)


def _exec(report_fd: int, argv: list[str], env: dict[str, str]) -> NoReturn:
    # Python ignores SIGPIPE and SIGXFSZ at startup and ignored signals survive exec; the step
    # gets the defaults every other program expects (SIGXFSZ is how the file limit kills).
    for signum in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(signum, signal.SIG_DFL)
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        _fail(report_fd, "exec", exc)


def _reap_all(report_fd: int, argv: list[str], env: dict[str, str]) -> NoReturn:
    """Run argv as a child and reap every descendant orphaned to us, then report.

    bwrap's outer process exits as soon as the sandbox's pid 1 reports the step's status,
    without waiting for that pid 1: as a subreaper we collect it, so no zombie of the sandbox
    user outlives the run (zombies count against RLIMIT_NPROC) and RUSAGE_CHILDREN covers the
    step's CPU time.
    """
    _check(_libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")
    launcher = os.getpid()
    child = os.fork()
    if child == 0:
        try:
            _die_with(launcher)  # bwrap, killed with us, takes the sandbox (--die-with-parent)
        except OSError as exc:
            _fail(report_fd, "setup", exc)
        _exec(report_fd, argv, env)
    child_status = None
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            child_status = status
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # ru_maxrss: the largest process reaped below the launcher (the step's, in practice), KiB.
    cpu_s = usage.ru_utime + usage.ru_stime
    _report(report_fd, status=child_status, cpu_s=cpu_s, maxrss_kb=usage.ru_maxrss)
    os._exit(0)


def main(spec: dict[str, Any]) -> NoReturn:
    """Apply the spec, then exec (or fork, exec and reap); failures are reported on report_fd.

    report_fd receives JSON lines: {"error", "message"} when setup or exec failed, and with
    spec["reap"] a final {"status", "cpu_s", "maxrss_kb"} for the child. It (and its child)
    dies with the worker process spec["parent_pid"] that started it.
    """
    report_fd = int(spec["report_fd"])
    # Close-on-exec: the exec'd program never holds (or writes to) the report pipe.
    os.set_inheritable(report_fd, False)
    try:
        _prepare(spec)
        _die_with(int(spec["parent_pid"]))
        if spec["reap"]:
            _reap_all(report_fd, spec["argv"], spec["env"])
    except (OSError, ValueError) as exc:
        _fail(report_fd, "setup", exc)
    _exec(report_fd, spec["argv"], spec["env"])


if __name__ == "__main__":
    # The spec comes from the worker (trusted) as hex-encoded marshal: no import cost.
    # argv: PARENT_PID SPEC (the pid is repeated in plain text for the sweep of orphans).
    main(marshal.loads(bytes.fromhex(sys.argv[2])))
