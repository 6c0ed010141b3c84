"""A background thread that samples something every interval seconds, from start() until stop().

A sample that fails ends the thread; stop() raises that failure in the
caller's thread, so a test or drill never judges samples that stopped
coming in (fail closed).
"""

from __future__ import annotations

import threading


class Periodic(threading.Thread):
    """Calls sample() at once, then every interval seconds, until stop(). Subclasses define sample() and what
    (the failure message's subject)."""

    what = "sampling"

    def __init__(self, interval, join_timeout=30):
        super().__init__(daemon=True)
        self.interval, self.join_timeout = interval, join_timeout
        self.error = None
        self._done = threading.Event()

    def sample(self):
        raise NotImplementedError

    def run(self):
        try:
            while True:
                self.sample()
                if self._done.wait(self.interval):
                    return
        except Exception as exc:  # noqa: BLE001  raised by stop(), in the caller's thread
            self.error = exc

    def stop(self):
        """Ends the sampling; raises RuntimeError if a sample failed or the last one does not end in time."""
        self._done.set()
        self.join(timeout=self.join_timeout)
        if self.error is not None:
            raise RuntimeError(f"{self.what} failed: {self.error}") from self.error
        if self.is_alive():
            raise RuntimeError(f"{self.what} did not stop within {self.join_timeout} s")
        return self
