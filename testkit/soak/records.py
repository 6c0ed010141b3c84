"""The soak's records and the logs its clients keep: one format, written by the clients, read by the verifier.

A record's key names its run, its producer and one of the producer's keys;
its value repeats them with the key's sequence number:

    key    b"RUN:PRODUCER:KEY"
    value  b"SOAK:RUN:PRODUCER:KEY:SEQ:" padded with dots to the record size

Every log is JSON lines, one event a line, with wall-clock times (seconds
since the epoch: the clients run in other network namespaces, on the same
host clock). A writer that dies mid-line leaves a torn last line, which the
reader skips and counts.
"""

from __future__ import annotations

import json
from pathlib import Path

VALUE_PREFIX = b"SOAK"


def key_bytes(run_id, producer, key):
    return b"%s:%s:%d" % (run_id.encode(), producer.encode(), key)


def encode(run_id, producer, key, seq, size):
    head = b"%s:%s:%s:%d:%d:" % (VALUE_PREFIX, run_id.encode(), producer.encode(), key, seq)
    return head + b"." * max(0, size - len(head))


def decode(value):
    """(run id, producer, key, seq) of a soak record's value, or None for anything else."""
    if value is None:
        return None
    parts = value.split(b":", 5)
    if len(parts) < 5 or parts[0] != VALUE_PREFIX:
        return None
    try:
        return parts[1].decode(), parts[2].decode(), int(parts[3]), int(parts[4])
    except (UnicodeDecodeError, ValueError):
        return None


class Log:
    """An append-only JSON-lines log, flushed at most every flush_every seconds (and at close)."""

    def __init__(self, path, clock, flush_every=0.5):
        self.path, self.clock, self.flush_every = Path(path), clock, flush_every
        self._file = self.path.open("a")
        self._flushed = clock()

    def write(self, event, **fields):
        self._file.write(json.dumps({"e": event, **fields}, separators=(",", ":")) + "\n")
        now = self.clock()
        if now - self._flushed >= self.flush_every:
            self._file.flush()
            self._flushed = now

    def close(self):
        self._file.flush()
        self._file.close()


def read_log(path):
    """(events, torn) of a JSON-lines log: every whole event, and how many lines could not be parsed.

    A missing file raises FileNotFoundError: a log the verifier expects and
    cannot find is a failure, never an empty pass.
    """
    events, torn = [], 0
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            torn += 1
    return events, torn
