"""python -m testkit.mirror: the testbed's release mirror, an HTTPS server on this machine.

Operators download Kafka's and Spark's release archives from Apache or from
a mirror of their own, each checked against its published checksum. The
testbed is such a site: this server serves the archives the testbed builds
(testbed/dist) over HTTPS, with a certificate from the testbed's CA, at this
machine's address on each DC's network, and the inventory points the roles'
archive URLs and checksums at it (examples/consumer/inventory).

start  put the archives in the mirror's directory, each with the <name>.sha512
       file its build wrote beside it, and start the server under a
       supervisor (testbed/up.yml); prints {"changed": ...}
stop   stop it (testbed/down.yml)
serve  the server itself
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import ssl
import sys
import threading

from testkit import REPO
from testkit.supervisor import Supervised

DIST = REPO / "testbed" / "dist"
STATE = DIST / "mirror"
ROOT = STATE / "files"
# What the mirror serves, from what the testbed builds and fetches.
SERVED = ("kafka_*.tgz", "kafka_*.tgz.sha512", "spark-*.tgz", "spark-*.tgz.sha512", "jmx_prometheus_javaagent-*.jar")
SUPERVISED = Supervised(STATE / "supervisor.pid", "testkit.mirror")


def publish(dist=DIST, root=ROOT):
    """Links each file of dist the mirror serves into root; True when anything changed."""
    root.mkdir(parents=True, exist_ok=True)
    changed = False
    for pattern in SERVED:
        for source in sorted(dist.glob(pattern)):
            target = root / source.name
            if not target.exists() or not os.path.samefile(source, target):
                target.unlink(missing_ok=True)
                os.link(source, target)
                changed = True
    return changed


class Handler(http.server.SimpleHTTPRequestHandler):
    """Files only: no directory listings."""

    def list_directory(self, path):
        self.send_error(404, "no listing")


def serve(root, addresses, port, cert, key):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    handler = functools.partial(Handler, directory=str(root))
    servers = []
    for address in addresses:
        server = http.server.ThreadingHTTPServer((address, port), handler)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        servers.append(server)
    for server in servers[1:]:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"mirror: serving {root} on {', '.join(addresses)} port {port}", flush=True)
    servers[0].serve_forever()


def start(addresses, port, cert, key):
    """Publishes the archives and starts the server unless one runs with these settings; {"changed": ...}."""
    changed = publish()
    config = {"addresses": sorted(addresses), "port": port, "cert": str(cert), "key": str(key)}
    config_path = STATE / "config.json"
    text = json.dumps(config, sort_keys=True)
    if SUPERVISED.pid() is not None and config_path.exists() and config_path.read_text() == text:
        return {"changed": changed}
    SUPERVISED.stop()
    config_path.write_text(text)
    argv = [sys.executable, "-m", "testkit.mirror", "serve", "--port", str(port), "--cert", str(cert), "--key",
            str(key), *[a for address in sorted(addresses) for a in ("--address", address)]]  # fmt: skip
    SUPERVISED.start(argv, STATE / "mirror.log")
    return {"changed": True}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.mirror", description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["start", "stop", "serve"])
    p.add_argument("--address", action="append", default=[], help="an address to listen on; repeat")
    p.add_argument("--port", type=int, default=8443)
    p.add_argument("--cert", help="the server's certificate (PEM, its chain after it)")
    p.add_argument("--key", help="the server's private key (PEM)")
    args = p.parse_args(argv)
    if args.command in ("start", "serve") and not (args.address and args.cert and args.key):
        p.error(f"{args.command} needs --address (one or more), --cert and --key")
    if args.command == "start":
        print(json.dumps(start(args.address, args.port, args.cert, args.key)))
    elif args.command == "stop":
        print(json.dumps({"changed": SUPERVISED.stop()}))
    else:
        serve(ROOT, args.address, args.port, args.cert, args.key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
