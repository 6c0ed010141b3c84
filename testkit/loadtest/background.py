"""The load harness in a child process, for the drills and the tests: start, wait until it writes, stop, read."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from testkit import REPO


class BackgroundLoad:
    """Runs `python -m testkit.loadtest` until stop(); files for its report and signals live in workdir.

    marks: also pass a marks file (mark() appends to it). capture: keep its
    output (returned by stop()) instead of letting it go to this process's.
    client_config_file: the client settings (credentials) as a key=value file,
    never on the command line. The acknowledged records are listed in
    workdir/acks ("partition seq" lines) once it has stopped.
    """

    def __init__(
        self, bootstrap_servers, dcs, rate, workdir, topic="load", duration=3600, marks=False, capture=False,
        client_config_file=None,
    ):  # fmt: skip
        workdir = Path(workdir)
        self.report_path, self.stop_path, self.ready_path = workdir / "load.json", workdir / "stop", workdir / "ready"
        self.acks_path = workdir / "acks"
        self.marks_path = workdir / "marks" if marks else None
        self.cmd = [
            sys.executable, "-m", "testkit.loadtest", "--bootstrap-servers", bootstrap_servers, "--topic", topic,
            *[arg for dc in dcs for arg in ("--dc", dc)], "--rate", str(rate), "--duration", str(duration),
            "--report", str(self.report_path), "--stop-file", str(self.stop_path),
            "--ready-file", str(self.ready_path), "--acks-file", str(self.acks_path),
            *(["--client-config", str(client_config_file)] if client_config_file else []),
            *(["--marks-file", str(self.marks_path)] if marks else []),
        ]  # fmt: skip
        self.capture = capture
        self.process = None

    def start(self, ready_timeout=60):
        """Start it; return once a first record is acknowledged, or raise RuntimeError."""
        out = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True} if self.capture else {}
        self.process = subprocess.Popen(self.cmd, cwd=REPO, **out)  # noqa: S603  our own harness, fixed arguments
        deadline = time.monotonic() + ready_timeout
        while not self.ready_path.exists():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("the load harness never got an acknowledgement")
            time.sleep(1)
        return self

    def mark(self, name, at=None):
        with self.marks_path.open("a") as f:
            f.write(f"{name}@{at}\n" if at is not None else f"{name}\n")

    def stop(self, timeout=900):
        """Stop writing, let the readers drain, and return the harness's output (when captured)."""
        self.stop_path.touch()
        output, _ = self.process.communicate(timeout=timeout)
        return output or ""

    @property
    def returncode(self):
        return self.process.returncode

    def report(self):
        return json.loads(self.report_path.read_text())
