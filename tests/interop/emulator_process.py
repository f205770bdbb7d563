"""Process handling the emulator modules share (emulator_s3, emulator_azure, emulator_gcs):
a free 127.0.0.1 port, a child that dies with its parent, and a stop that always reaps."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess

STOP_TIMEOUT_S = 10.0


def free_port() -> int:
    """A port free on 127.0.0.1 now (a child binds it next; callers retry on a clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent(sig: int = signal.SIGKILL):
    """A preexec_fn that has the kernel send `sig` to the child when the thread that started
    it exits (Linux PR_SET_PDEATHSIG), so a killed test run leaves no emulator behind."""

    def preexec() -> None:
        with contextlib.suppress(Exception):
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(1, sig, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG

    return preexec


def stop(proc: subprocess.Popen | None, *, group: bool = False) -> None:
    """SIGTERM, then SIGKILL after STOP_TIMEOUT_S; always reaps. `group`: signal the child's
    whole process group (a launcher script and the server it starts)."""
    if proc is None:
        return

    def send(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    if proc.poll() is None:
        send(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
            proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
