"""TLS on raw sockets, with Python's own ssl module: each case sees the exact alert or verification error."""

from __future__ import annotations

import socket
import ssl
import struct


def api_versions_request(correlation_id=7):
    """A Kafka ApiVersions v0 request: every listener answers it before any authentication."""
    client_id = b"it-security"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def exchange(sock, correlation_id=7):
    """Send ApiVersions and return the correlation id of the answer, or None when the peer closed."""
    sock.sendall(api_versions_request(correlation_id))
    head = sock.recv(8)
    if len(head) < 8:
        return None
    return struct.unpack(">ii", head)[1]


def tls_exchange(address, port, context, server_hostname=None):
    with (
        socket.create_connection((address, port), timeout=15) as raw,
        context.wrap_socket(raw, server_hostname=server_hostname or address) as tls,
    ):
        return exchange(tls)


def peer_certificate(address, port, context):
    """The DER certificate a listener presents, once the handshake (and a Kafka exchange) succeeded."""
    with (
        socket.create_connection((address, port), timeout=15) as raw,
        context.wrap_socket(raw, server_hostname=address) as tls,
    ):
        exchange(tls)
        return tls.getpeercert(binary_form=True)


def context(ca_file, cert=None, key=None):
    ctx = ssl.create_default_context(cafile=str(ca_file))
    if cert:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx
