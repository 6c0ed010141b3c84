"""Each DC's Spark cluster as the tests see it: its master's host over SSH, what that host's master lists and
logs, an application submitted to it from this host, and what the processes here and there show meanwhile.

Needs the testbed (make up converge) and, for the listening sockets, root on this host.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

from kafka_smoke.submit import submit_command, submit_env
from testkit.periodic import Periodic

SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
# A PySpark application whose tasks run on the cluster's executors in the JVM only (the workers have no Python
# of this host), through a shuffle (encrypted on disk), then keeps its executors for a while, so that a sampler
# sees them: argv[1] seconds.
APP = """\
import sys
import time

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
total = spark.range(0, 1000, numPartitions=2).selectExpr("sum(id * 2) AS total").first()["total"]
print(f"RESULT {total}", flush=True)
time.sleep(float(sys.argv[1]))
spark.stop()
"""
APP_RESULT = "RESULT 999000"
# Where the daemons and the streaming job write (roles/spark, roles/spark_stream): journald, and each
# executor's stdout and stderr in the worker's directory.
LOGS = (
    "journalctl --no-pager -o cat -u spark-master -u spark-worker -u 'spark-stream-*'; "
    "find /var/lib/spark/work -type f \\( -name stderr -o -name stdout \\) -mmin -{minutes} -exec cat {{}} + ; true"
)
# A URL's body, read on the node (its image has Python, no curl).
STATUS = "python3 -c 'import sys, urllib.request as u; print(u.urlopen(sys.argv[1], timeout=10).read().decode())'"


def ssh_run(ssh, address, command, check=True, timeout=120):
    """command's stdout on the host at address, reached over SSH with Ansible's settings (ssh: ansible_* vars), run
    as root: through sudo when Ansible logs in as another user."""
    user = ssh.get("ansible_user")
    cmd = ["ssh", *shlex.split(ssh.get("ansible_ssh_common_args") or "")]
    if ssh.get("ansible_ssh_private_key_file"):
        cmd += ["-i", ssh["ansible_ssh_private_key_file"]]
    if user not in (None, "root"):
        command = f"sudo -n sh -c {shlex.quote(command)}"
    cmd += [f"{user}@{address}" if user else address, command]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)  # noqa: S603  fixed arguments
    if check and proc.returncode != 0:
        raise RuntimeError(f"{address}: {command}: {proc.stderr.strip()}")
    return proc.stdout


class SparkNode:
    """A DC's Spark master host (the testbed runs a master and a worker on it)."""

    def __init__(self, cluster, dc):
        self.dc = dc
        self.address = cluster.spark[dc]["host"]
        self.ssh = cluster.spark[dc]["ssh"]

    def run(self, command, check=True, timeout=120):
        return ssh_run(self.ssh, self.address, command, check, timeout)

    def status(self, port):
        """A web UI's JSON status, read on the node itself (the UIs listen on its loopback address only)."""
        return json.loads(self.run(f"{STATUS} http://127.0.0.1:{port}/json/"))

    def applications(self, port=8080):
        """The names of the applications the master lists, running or completed."""
        status = self.status(port)
        return {app["name"] for app in status.get("activeapps", []) + status.get("completedapps", [])}

    def processes(self):
        """Every process's command line on the node."""
        return self.run("ps -ww -eo pid=,args=")

    def logs(self, minutes=60):
        """The Spark daemons' and jobs' journals, and the executors' logs of the last minutes."""
        return self.run(LOGS.format(minutes=minutes), timeout=300)


def probe(host, ports, timeout=5):
    """{port: "open" | "refused" | "error: ..."} of TCP connections to host (run as a script in a DC client's
    namespace: python -m testkit.spark_cluster HOST PORT...)."""
    out = {}
    for port in ports:
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
            out[str(port)] = "open"
        except ConnectionRefusedError:
            out[str(port)] = "refused"
        except OSError as exc:
            out[str(port)] = f"error: {exc}"
    return out


def answers_http(host, port, timeout=5):
    """Whether a server at host:port answers an HTTP request (a web UI would; Spark's RPC does not)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return s.recv(16).startswith(b"HTTP/")
    except OSError:
        return False


class Submission:
    """An application submitted with spark-submit from this host (deploy mode client) to master, with its Spark
    settings in properties, until wait()."""

    def __init__(self, master, name, properties, workdir, confs=(), verbose=False, hold_seconds=0):
        app = Path(workdir) / "spark_security_app.py"
        app.write_text(APP)
        self.name = name
        cmd = submit_command(str(SPARK_SUBMIT), master, name, "", confs, properties)
        if verbose:
            cmd.insert(1, "--verbose")
        self.cmd = [*cmd, str(app), str(hold_seconds)]
        # A session of its own: the driver's JVM and the Python process it starts end together in kill().
        self.process = subprocess.Popen(  # noqa: S603  fixed arguments
            self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=submit_env(str(SPARK_SUBMIT)),
            start_new_session=True,
        )  # fmt: skip
        self.returncode, self.stdout, self.stderr = None, "", ""

    def wait(self, timeout=600):
        self.stdout, self.stderr = self.process.communicate(timeout=timeout)
        self.returncode = self.process.returncode
        return self

    def kill(self):
        """End the driver and its children if they still run."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


LISTENER = re.compile(r"^\S+\s+\d+\s+\d+\s+(\S+):(\d+)\s+\S+\s+users:\((.*)\)\s*$")


def listening(ss_output):
    """{pid: {(address, port)}} of `ss -Hltnp`'s lines: the address to connect to (the loopback one for a
    socket bound to every address, without an interface's scope)."""
    out = {}
    for line in ss_output.splitlines():
        found = LISTENER.match(line.strip())
        if not found:
            continue
        address = found.group(1).strip("[]").removeprefix("::ffff:").partition("%")[0]  # 127.0.0.53%lo
        if address in ("*", "0.0.0.0", "::"):
            address = "127.0.0.1"
        for pid in re.findall(r"pid=(\d+)", found.group(3)):
            out.setdefault(int(pid), set()).add((address, int(found.group(2))))
    return out


class Sampler(Periodic):
    """Every interval until stop(): this host's and the nodes' process lists, and, for this host's drivers of the
    named applications, the ports they listen on and whether any answers HTTP (an application UI would)."""

    what = "sampling the processes"

    def __init__(self, nodes, watched_names, interval=2.0):
        super().__init__(interval, join_timeout=120)
        self.nodes, self.watched = nodes, set(watched_names)
        self.local, self.remote = [], {node.dc: [] for node in nodes}
        self.ports = {}  # {application name: {(address, port): answers HTTP}}

    def sample(self):
        ps = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
        self.local.append(ps)
        drivers = {}
        for line in ps.splitlines():
            pid, _, args = line.strip().partition(" ")
            if "org.apache.spark.deploy.SparkSubmit" in args:
                for name in self.watched:
                    if re.search(rf"--name {re.escape(name)}(\s|$)", args):
                        drivers[int(pid)] = name
        if drivers:
            ss = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
            for pid, sockets in listening(ss).items():
                if pid in drivers:
                    seen = self.ports.setdefault(drivers[pid], {})
                    for address, port in sockets - set(seen):
                        seen[(address, port)] = answers_http(address, port)
        for node in self.nodes:
            self.remote[node.dc].append(node.processes())


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    print(json.dumps(probe(argv[0], argv[1:])))


if __name__ == "__main__":
    main()
