"""What the Spark refusal tests read from a host: its listening sockets, a port's answer, a web UI's."""

import socket
import threading

from testkit.spark_cluster import answers_http, listening, probe

# `ss -Hltnp` as the testbed's host prints it while a PySpark driver runs (its RPC and block manager on the DC
# network's address, an application UI on every address) beside other services.
SS = """\
LISTEN 0      5               127.0.0.1:55157 0.0.0.0:* users:(("python3",pid=20370,fd=5))
LISTEN 0      128               0.0.0.0:2024  0.0.0.0:*
LISTEN 0      4096   [::ffff:10.91.1.1]:33949       *:* users:(("java",pid=20284,fd=322))
LISTEN 0      1                       *:4040        *:* users:(("java",pid=20284,fd=306))
LISTEN 0      4096   [::ffff:10.91.1.1]:44909       *:* users:(("java",pid=20284,fd=305))
LISTEN 0      4096        127.0.0.53%lo:53    0.0.0.0:* users:(("systemd-resolve",pid=31,fd=14))
LISTEN 0      128                  [::]:22       [::]:* users:(("sshd",pid=7,fd=4),("sshd",pid=8,fd=4))
"""


def test_each_process_listens_where_a_client_can_connect():
    found = listening(SS)
    assert found[20284] == {("10.91.1.1", 33949), ("127.0.0.1", 4040), ("10.91.1.1", 44909)}
    assert found[20370] == {("127.0.0.1", 55157)}
    assert found[31] == {("127.0.0.53", 53)}
    # A socket two processes share belongs to both; a line without its process names none.
    assert found[7] == found[8] == {("127.0.0.1", 22)}
    assert set(found) == {20284, 20370, 31, 7, 8}


def serve(reply):
    """A server on the loopback address that answers one connection's first bytes with reply (None: closes it);
    its port."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer():
        with server:
            conn, _ = server.accept()
            with conn:
                conn.recv(64)
                if reply is not None:
                    conn.sendall(reply)

    threading.Thread(target=answer, daemon=True).start()
    return server.getsockname()[1]


def closed_port():
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


def test_a_port_is_open_or_refused():
    listening_port, closed = serve(None), closed_port()
    assert probe("127.0.0.1", [listening_port, str(closed)], timeout=2) == {
        str(listening_port): "open",
        str(closed): "refused",
    }


def test_an_http_server_answers_and_spark_rpc_does_not():
    assert answers_http("127.0.0.1", serve(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), timeout=2)
    # Spark's RPC reads a request's first bytes as a frame length and drops the connection.
    assert not answers_http("127.0.0.1", serve(None), timeout=2)
    assert not answers_http("127.0.0.1", serve(b"\x00\x00\x00\x00\x00\x00\x00\x15"), timeout=2)
    assert not answers_http("127.0.0.1", closed_port(), timeout=2)
