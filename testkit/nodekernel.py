"""python -m testkit.nodekernel: the testbed, as its nodes' host, sets the kernel settings they cannot.

kafka_node sizes a Kafka host's kernel for the WAN (plugins/module_utils/kernel.py); in a
container /proc/sys is read-only, so the role leaves those settings to the host and names
them. The namespaced ones (net.ipv4.*: the TCP buffers' maxima, slow start after idle) are
the testbed's to set, in each node's network namespace, as a container platform sets a
pod's sysctls; net.core.* and vm.* stay the machine's own. testbed/up.yml runs `apply` with
the settings the role derives from the inventory's kafka_wan_link; the kernel benchmark
(testkit.bench.kernel) applies Linux's defaults and the sized ones in turn.

apply  --settings JSON --container NAME [--container NAME ...]   prints {"changed": ...}
show   --container NAME [...]                                    each node's namespaced values
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from ansible_collections.stretch.kafka.plugins.module_utils import kernel


def namespaced(settings):
    """The settings a node's network namespace holds: the ones its host can set for it."""
    return {name: kernel.normalize(value) for name, value in settings.items() if not kernel.host_owned(name)}


def _pid(container):
    proc = subprocess.run(["podman", "inspect", "--format", "{{.State.Pid}}", container],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    pid = proc.stdout.strip()
    if proc.returncode != 0 or not pid.isdigit() or pid == "0":
        raise RuntimeError(f"{container}: not running ({proc.stderr.strip() or pid})")
    return pid


def _in_netns(pid, *argv):
    proc = subprocess.run(["nsenter", "--target", pid, "--net", "--", *argv],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"nsenter --target {pid} --net {' '.join(argv)}: {proc.stderr.strip()}")
    return proc.stdout


def read(container, names):
    """{name: value} of the container's network namespace."""
    pid = _pid(container)
    return {name: kernel.normalize(_in_netns(pid, "cat", kernel.proc_path(name))) for name in names}


def apply(containers, settings):
    """Writes the namespaced settings that differ into each container's network namespace; {"changed": ...}."""
    wanted = namespaced(settings)
    changed = False
    for container in containers:
        pid = _pid(container)
        current = {name: kernel.normalize(_in_netns(pid, "cat", kernel.proc_path(name))) for name in wanted}
        for name, value in kernel.plan(wanted, current).items():
            _in_netns(pid, "sysctl", "-q", "-w", f"{name}={value}")
            changed = True
    return {"changed": changed}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.nodekernel", description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["apply", "show"])
    p.add_argument("--container", action="append", required=True, help="a node's container; repeat")
    p.add_argument("--settings", help="apply: {sysctl name: value} as JSON (the role's kernel_settings)")
    args = p.parse_args(argv)
    try:
        if args.command == "apply":
            if not args.settings:
                p.error("apply needs --settings")
            print(json.dumps(apply(args.container, json.loads(args.settings))))
        else:
            names = namespaced(kernel.settings({"bandwidth_mbit": 1, "rtt_ms": 1}))
            print(json.dumps({c: read(c, names) for c in args.container}, indent=1))
    except RuntimeError as exc:
        print(f"testkit.nodekernel: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
