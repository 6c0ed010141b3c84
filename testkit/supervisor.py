"""A command of the testbed's kept running in the background: the WAN's delayer, the release mirror.

A detached supervisor process (`python -m testkit.supervisor PIDFILE -- ARGV`)
runs ARGV and starts it again a second after it exits, until SIGTERM; SIGHUP
is passed on to the child (a reload). Its pid is in PIDFILE, and the
child's output goes to the log file given at start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from testkit import REPO


def proc_stat(pid):
    """(state, parent pid) of a process from /proc/<pid>/stat ("Z" for a zombie), or None when there is none."""
    try:
        fields = Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()  # after "pid (comm)"
        return fields[0], int(fields[1])
    except (OSError, TypeError, ValueError, IndexError):
        return None


class Supervised:
    """One supervised command: its pid file, and the marker its supervisor's command line carries."""

    def __init__(self, pid_path, marker):
        self.pid_path, self.marker = Path(pid_path), marker.encode()

    def pid(self):
        """The running supervisor's pid, or None (a stale pid file, or another process under that pid)."""
        try:
            pid = int(self.pid_path.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return None
        return pid if b"testkit.supervisor" in cmdline and self.marker in cmdline else None

    def start(self, argv, log_path):
        """Starts the supervisor of argv (detached, in its own session); returns its pid."""
        self.pid_path.parent.mkdir(parents=True, exist_ok=True)
        with Path(log_path).open("a") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "testkit.supervisor", str(self.pid_path), "--", *argv],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO,
            )  # fmt: skip
        self.pid_path.write_text(f"{proc.pid}\n")
        return proc.pid

    def reload(self):
        """SIGHUP to the child, through its supervisor; False when none runs."""
        pid = self.pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGHUP)
        return True

    def stop(self, timeout=10):
        """Stops the supervisor and its child; True when one was running."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while self.pid() is not None and time.monotonic() < deadline:
                time.sleep(0.1)
        self.pid_path.unlink(missing_ok=True)
        return pid is not None


def serve(argv):
    """Runs argv and starts it again whenever it exits, until SIGTERM."""
    stopping = False
    child = None

    def on_term(*_):
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.terminate()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, lambda *_: child is not None and child.poll() is None and child.send_signal(1))
    while not stopping:
        child = subprocess.Popen(argv)
        code = child.wait()
        if not stopping:
            print(f"supervisor: {' '.join(argv[:4])} exited ({code}); starting it again in 1 s", flush=True)
            time.sleep(1)


if __name__ == "__main__":
    separator = sys.argv.index("--")
    serve(sys.argv[separator + 1 :])
