"""kernel_settings (module_utils/kernel.py's apply): each setting that differs written, read back, and one the
kernel did not take refused; in a container only the settings the host owns (outside the node's network
namespace) left to it with a warning, a namespaced one that is not as wanted refused."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import kernel

WANTED = {
    "net.core.rmem_max": "75497472",
    "net.ipv4.tcp_rmem": "4096 131072 75497472",
    "vm.swappiness": "1",
}


class Proc:
    """/proc/sys as the module sees it: values, which are read-only, and what the kernel makes of a write."""

    def __init__(self, values, read_only=(), takes=None):
        self.values, self.read_only, self.takes = dict(values), set(read_only), takes or (lambda name, v: v)
        self.writes = []

    def name(self, path):
        return path.removeprefix("/proc/sys/").replace("/", ".")

    def read(self, path):
        value = self.values.get(self.name(path))
        return None if value is None else value + "\n"

    def writable(self, path):
        return self.name(path) not in self.read_only

    def write(self, path, value):
        name = self.name(path)
        self.writes.append(name)
        self.values[name] = self.takes(name, value)


def apply(proc, container=False, check_mode=False, wanted=WANTED):
    return kernel.apply(wanted, container, check_mode, read=proc.read, write=proc.write, writable=proc.writable)


LINUX = {"net.core.rmem_max": "212992", "net.ipv4.tcp_rmem": "4096\t131072\t6291456", "vm.swappiness": "60"}


def test_what_differs_is_written_and_read_back():
    proc = Proc(LINUX)
    done = apply(proc)
    assert done == {"written": WANTED, "host_owned": {}, "failed": []}
    assert apply(proc) == {"written": {}, "host_owned": {}, "failed": []}, "a second run writes nothing"


def test_a_value_the_kernel_did_not_take_is_refused_naming_what_it_has():
    # The kernel clamps or rejects silently (a write that returns but leaves another value).
    proc = Proc(LINUX, takes=lambda name, v: "4096 131072 6291456" if name == "net.ipv4.tcp_rmem" else v)
    done = apply(proc)
    assert done["failed"] == [
        "kernel setting net.ipv4.tcp_rmem: wrote 4096 131072 75497472, and the kernel has 4096 131072 6291456 "
        "(/proc/sys/net/ipv4/tcp_rmem): it did not take the value"
    ]


def test_check_mode_writes_nothing_and_reads_nothing_back():
    proc = Proc(LINUX)
    assert apply(proc, check_mode=True)["written"] == WANTED
    assert proc.writes == []


def test_outside_a_container_a_setting_that_cannot_be_written_fails_naming_it():
    done = apply(Proc(LINUX, read_only={"vm.swappiness"}))
    assert done["failed"] == ["kernel setting vm.swappiness cannot be written (/proc/sys/vm/swappiness); wanted 1"]


def test_in_a_container_the_hosts_settings_are_left_to_it():
    # net.core.* and vm.* are not namespaced: a container cannot set them, its host does.
    proc = Proc({**LINUX, "net.ipv4.tcp_rmem": WANTED["net.ipv4.tcp_rmem"]}, read_only=set(LINUX))
    done = apply(proc, container=True)
    assert done["failed"] == []
    assert done["host_owned"] == {
        "net.core.rmem_max": {"wanted": "75497472", "current": "212992"},
        "vm.swappiness": {"wanted": "1", "current": "60"},
    }


def test_in_a_container_a_namespaced_setting_not_as_wanted_is_refused_not_warned():
    # net.ipv4.* belongs to the node's network namespace: the container platform sets it (the testbed does),
    # and a node whose TCP buffers are not sized for the WAN must not converge with a warning only.
    proc = Proc({**LINUX, "net.core.rmem_max": "75497472", "vm.swappiness": "1"}, read_only=set(LINUX))
    done = apply(proc, container=True)
    assert done["host_owned"] == {}
    assert done["failed"] == [
        "kernel setting net.ipv4.tcp_rmem cannot be written in this container (/proc/sys/net/ipv4/tcp_rmem); wanted "
        "4096 131072 75497472, has 4096 131072 6291456: it belongs to the node's network namespace, which the "
        "container platform sets for the container (podman run --sysctl, a pod's sysctls), so set it there"
    ]


@pytest.mark.parametrize(
    ("name", "owned"),
    [("net.ipv4.tcp_rmem", False), ("net.ipv6.conf.all.forwarding", False), ("net.core.rmem_max", True),
     ("vm.swappiness", True), ("kernel.pid_max", True)],
)  # fmt: skip
def test_the_host_owns_every_setting_outside_the_network_namespace(name, owned):
    assert kernel.host_owned(name) is owned
