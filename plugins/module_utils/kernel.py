"""The kernel settings a broker host needs over a WAN, sized from the link the inventory describes.

A TCP connection carries at most one window per round trip. Kafka's sockets
are left to the kernel's autotuning (socket.*.buffer.bytes -1), which never
grows a buffer past net.ipv4.tcp_rmem/tcp_wmem's maximum (Linux: 6 MiB and
4 MiB), nor an explicitly sized one past net.core.rmem_max/wmem_max. So the
maxima must hold the link's bandwidth-delay product, with room: twice it.
The memory settings are the ones Kafka's operations documentation asks of
a broker host (page cache over swap, a memory map per index file).
"""

from __future__ import annotations

import math
import os

# Linux's own (min, default) of the TCP buffers, kept; only the maximum is sized.
TCP_RMEM_MIN_DEFAULT = (4096, 131072)
TCP_WMEM_MIN_DEFAULT = (4096, 16384)
# Linux's default maxima: the sized ones never go below them.
LINUX_RMEM_MAX = 6291456
LINUX_WMEM_MAX = 4194304
MIB = 1 << 20

# Kafka's operations documentation: keep the page cache rather than swap, and
# a memory map per log segment index (two per segment) well past 65530; more
# when the segments a broker holds need more (module_utils/sizing.py).
MEMORY = {"vm.swappiness": "1", "vm.max_map_count": "262144"}
# A WAN connection that idles (a quiet partition's fetch) keeps its window.
TCP = {"net.ipv4.tcp_slow_start_after_idle": "0"}
LINK_KEYS = ("bandwidth_mbit", "rtt_ms")
# The settings a network namespace holds of its own: in a container, its platform sets them for it (podman run
# --sysctl, a pod's sysctls). The others (net.core.*, vm.*, ...) are not namespaced: the machine's, its host's.
NAMESPACED = ("net.ipv4.", "net.ipv6.")
PROC_SYS = "/proc/sys"


def _number(value, name):
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive number, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, not {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{name} must be a positive number, not {value!r}")
    return number


def link_problems(link, name="kafka_wan_link"):
    """Why link ({bandwidth_mbit, rtt_ms}) cannot size the buffers; [] when it can."""
    if not isinstance(link, dict):
        return [f"{name} must be a mapping with bandwidth_mbit and rtt_ms, not {link!r}"]
    unknown = sorted(set(link) - set(LINK_KEYS))
    problems = [f"{name} has unknown key(s) {unknown}: it takes {', '.join(LINK_KEYS)}"] if unknown else []
    for key in LINK_KEYS:
        try:
            _number(link.get(key), f"{name}.{key}")
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def bdp_bytes(bandwidth_mbit, rtt_ms):
    """The link's bandwidth-delay product in bytes: what must be in flight to fill it."""
    return _number(bandwidth_mbit, "bandwidth_mbit") * 1e6 / 8 * _number(rtt_ms, "rtt_ms") / 1e3


def buffer_max(bandwidth_mbit, rtt_ms, floor):
    """Twice the bandwidth-delay product, rounded up to a MiB, never below floor (the kernel's default maximum)."""
    return max(floor, math.ceil(2 * bdp_bytes(bandwidth_mbit, rtt_ms) / MIB) * MIB)


def settings(link, map_areas=0):
    """{sysctl name: value as /proc/sys shows it, whitespace-separated} for a broker host on the link.

    map_areas: the memory maps the node's log segments need (sizing.node_layout()); vm.max_map_count is
    raised to it when the default is short.
    """
    problems = link_problems(link)
    if problems:
        raise ValueError("; ".join(problems))
    rmem = buffer_max(link["bandwidth_mbit"], link["rtt_ms"], LINUX_RMEM_MAX)
    wmem = buffer_max(link["bandwidth_mbit"], link["rtt_ms"], LINUX_WMEM_MAX)
    return {
        "net.core.rmem_max": str(rmem),
        "net.core.wmem_max": str(wmem),
        "net.ipv4.tcp_rmem": " ".join(str(v) for v in (*TCP_RMEM_MIN_DEFAULT, rmem)),
        "net.ipv4.tcp_wmem": " ".join(str(v) for v in (*TCP_WMEM_MIN_DEFAULT, wmem)),
        **TCP,
        **MEMORY,
        "vm.max_map_count": str(max(int(MEMORY["vm.max_map_count"]), int(map_areas or 0))),
    }


def proc_path(name, root=PROC_SYS):
    """/proc/sys path of a sysctl name: net.ipv4.tcp_rmem -> /proc/sys/net/ipv4/tcp_rmem."""
    if not name or "/" in name or ".." in name or not all(part for part in name.split(".")):
        raise ValueError(f"{name!r} is not a sysctl name")
    return f"{root}/" + name.replace(".", "/")


def host_owned(name):
    """Whether a container's host owns the setting: one outside the container's network namespace."""
    return not name.startswith(NAMESPACED)


def normalize(value):
    """A sysctl value as compared: whitespace runs (the kernel prints tabs) made one space."""
    return " ".join(str(value).split())


def plan(wanted, current):
    """What to write: {name: value} of wanted whose current value (None: unreadable) differs."""
    return {name: value for name, value in wanted.items() if normalize(current.get(name) or "") != normalize(value)}


def sysctl_file(applied):
    """The text of the sysctl.d file that applies these settings again at boot."""
    lines = ["# Kafka broker host settings (stretch.kafka.kafka_node); changes are overwritten."]
    lines += [f"{name} = {normalize(value)}" for name, value in sorted(applied.items())]
    return "\n".join(lines) + "\n"


def read_text(path):
    """A file's text, None when it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _write(path, value):
    with open(path, "w") as f:
        f.write(value)


def _writable(path):
    return os.access(path, os.W_OK)


def apply(wanted, container, check_mode=False, read=read_text, write=_write, writable=_writable):
    """Writes each wanted setting ({name: value}) whose value in /proc/sys differs, and reads each one written
    back: {"written": {name: value}, "host_owned": {name: {wanted, current}}, "failed": [message]}.

    The kernel may take a write and keep another value (it clamps, or
    ignores what it cannot parse): a setting read back otherwise fails,
    naming what the kernel has. One that does not exist or cannot be
    written fails, except in a container for a setting its host owns
    (host_owned: not namespaced, so no container can set it): that one is
    left to the host and reported. A namespaced one (the TCP buffers) is
    the container platform's to set for the container; not as wanted, it
    fails, since a node whose buffers are not sized for the WAN would
    converge with a warning only. check_mode writes and reads back nothing.
    """
    paths = {name: proc_path(name) for name in wanted}
    current = {name: read(path) for name, path in paths.items()}
    written, left, failed = {}, {}, []
    for name, value in plan(wanted, current).items():
        problem = None
        if current[name] is None:
            problem = "does not exist on this kernel"
        elif not writable(paths[name]):
            problem = "cannot be written"
        elif not check_mode:
            try:
                write(paths[name], value)
            except OSError as exc:
                problem = f"could not be written ({exc.strerror})"
        has = normalize(current[name] or "")
        if problem is None:
            written[name] = value
        elif container and host_owned(name):
            left[name] = {"wanted": value, "current": has}
        elif container:
            failed.append(
                f"kernel setting {name} {problem} in this container ({paths[name]}); wanted {value}, has "
                f"{has or 'nothing'}: it belongs to the node's network namespace, which the container platform sets "
                "for the container (podman run --sysctl, a pod's sysctls), so set it there"
            )
        else:
            failed.append(f"kernel setting {name} {problem} ({paths[name]}); wanted {value}")
    for name, value in written.items() if not check_mode else ():
        got = normalize(read(paths[name]) or "")
        if got != value:
            failed.append(
                f"kernel setting {name}: wrote {value}, and the kernel has {got or 'nothing'} ({paths[name]}): "
                "it did not take the value"
            )
    return {"written": written, "host_owned": left, "failed": failed}
