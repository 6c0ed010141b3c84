"""The soak's steady load: a producer and a group member in each broker DC, each a client of its DC's network.

Each DC gets one network namespace on its bridge (testkit.dcnet.DcClient),
where its producer (testkit.soak.producer) and its member of the one
consumer group (testkit.soak.consumer) run as child processes, so their
traffic to the other DC is routed by the host like the brokers': the WAN
delays it and the faults' cuts drop it. Their logs go to the run's
directory: producer-<dc>.jsonl, consumer-<dc>.jsonl, and each one's output
in <name>.out.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

from testkit import REPO
from testkit.dcnet import DcClient


class Clients:
    def __init__(self, cluster, workdir, topic, run_id, rate, duration, dcs=None, config_file=None):
        self.cluster, self.workdir, self.topic, self.run_id, self.rate = cluster, Path(workdir), topic, run_id, rate
        self.duration = duration  # an upper bound on the clients' lives, in seconds
        self.dcs = list(dcs or cluster.dcs)
        self.own_config = config_file is None
        self.config_file = config_file or cluster.client_config_file(self.workdir)
        self.group = f"soak-{run_id}"
        self.stop_path = self.workdir / "stop"
        self.producers, self.members = {}, {}
        self._stack = contextlib.ExitStack()

    def _start(self, client, module, name, *args):
        cmd = client.wrap([sys.executable, "-m", module, "--bootstrap-servers", self.cluster.bootstrap_servers,
                           "--client-config", str(self.config_file), "--topic", self.topic,
                           "--duration", str(int(self.duration)), *args])  # fmt: skip
        out = (self.workdir / f"{name}.out").open("w")
        self._stack.callback(out.close)
        # A session of their own: a Ctrl-C at the terminal stops the soak, which stops them cleanly (their logs
        # end with what was left unconfirmed), instead of killing them mid-line.
        return subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def __enter__(self):
        self._stack.__enter__()
        try:
            for dc in self.dcs:
                client = self._stack.enter_context(DcClient(dc))
                self.producers[dc] = self._start(
                    client, "testkit.soak.producer", f"producer-{dc}", "--run", self.run_id, "--name", dc,
                    "--out", str(self.workdir / f"producer-{dc}.jsonl"), "--stop-file", str(self.stop_path),
                    "--rate", str(self.rate),
                )  # fmt: skip
                self.members[dc] = self._start(
                    client, "testkit.soak.consumer", f"consumer-{dc}", "--group", self.group, "--rack", dc,
                    "--out", str(self.workdir / f"consumer-{dc}.jsonl"),
                )  # fmt: skip
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def acknowledged(self, dc):
        path = self.workdir / f"producer-{dc}.jsonl"
        return path.exists() and '"e":"ack"' in path.read_text()

    def wait_writing(self, timeout=90):
        """Until every producer has an acknowledgement in its log; raises if one dies or the time is up."""
        deadline = time.monotonic() + timeout
        while not all(self.acknowledged(dc) for dc in self.dcs):
            dead = [name for name, alive in self.alive().items() if not alive]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"the soak's clients did not start writing in {timeout} s (exited: {dead}); "
                                   f"see {self.workdir}/*.out")  # fmt: skip
            time.sleep(1)

    def processes(self):
        """{"producer-<dc>" or "consumer-<dc>": its process}."""
        return {**{f"producer-{dc}": p for dc, p in self.producers.items()},
                **{f"consumer-{dc}": p for dc, p in self.members.items()}}  # fmt: skip

    def alive(self):
        return {name: p.poll() is None for name, p in self.processes().items()}

    def stop(self, producer_timeout=300, drain=20, member_timeout=90):
        """Producers stop and log what is unconfirmed; the members read the rest, commit, and leave."""
        self.stop_path.touch()
        _wait(self.producers.values(), producer_timeout)
        time.sleep(drain)
        for member in self.members.values():
            if member.poll() is None:
                member.terminate()
        _wait(self.members.values(), member_timeout)
        return {name: p.returncode for name, p in self.processes().items()}

    def __exit__(self, *exc):
        self.stop_path.touch()
        for process in (*self.producers.values(), *self.members.values()):
            if process.poll() is None:
                process.terminate()
        _wait([*self.producers.values(), *self.members.values()], 30)
        for process in (*self.producers.values(), *self.members.values()):
            if process.poll() is None:
                process.kill()
        if self.own_config:
            Path(self.config_file).unlink(missing_ok=True)  # the credentials do not stay with the run's logs
        return self._stack.__exit__(*exc)


def _wait(processes, timeout):
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
