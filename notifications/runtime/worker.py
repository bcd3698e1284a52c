"""The worker: separate dispatch, timeout and callback loops over one ``Runtime``.

Loops coordinate with other processes only through database claims. ``stop()`` asks every loop
to stop claiming; a loop finishes (settles) the batch it holds, then exits. ``run_once()`` runs
one pass of each loop inline, for tests and ``runworker --once``.
"""
import logging
import threading

from django.conf import settings
from django.db import close_old_connections

log = logging.getLogger("uns.worker")


class Worker:
    """``runtime``: a ``Runtime``; ``poll_interval``: seconds a loop waits after finding no work."""

    LOOPS = ("dispatch", "timeout", "callback")

    def __init__(self, runtime, *, poll_interval: float | None = None):
        self.runtime = runtime
        self.poll_interval = float(poll_interval if poll_interval is not None else settings.UNS_POLL_INTERVAL)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # one pass of each loop -------------------------------------------------------------
    def dispatch_pass(self) -> int:
        return len(self.runtime.dispatch())

    def timeout_pass(self) -> int:
        return len(self.runtime.expire())

    def callback_pass(self) -> int:
        counts = self.runtime.deliver_callbacks()
        return sum(counts.values())

    def run_once(self) -> dict:
        """One pass of each loop; returns how many items each handled."""
        return {"dispatch": self.dispatch_pass(), "timeout": self.timeout_pass(), "callback": self.callback_pass()}

    # the loops ---------------------------------------------------------------------------
    def _loop(self, name: str) -> None:
        step = getattr(self, f"{name}_pass")
        log.info("worker loop %s started", name)
        try:
            while not self._stop.is_set():
                try:
                    handled = step()
                except Exception:
                    log.exception("worker loop %s failed a pass; continuing", name)
                    handled = 0
                finally:
                    close_old_connections()
                if not handled:
                    self._stop.wait(self.poll_interval)
        finally:
            close_old_connections()
            log.info("worker loop %s stopped", name)

    def start(self) -> None:
        """Start the three loops in daemon threads."""
        if self._threads:
            return
        self._stop.clear()
        for name in self.LOOPS:
            t = threading.Thread(target=self._loop, args=(name,), name=f"uns-{name}", daemon=True)
            t.start()
            self._threads.append(t)

    def request_stop(self) -> None:
        """Ask the loops to stop claiming (safe from a signal handler)."""
        self._stop.set()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop claiming and wait up to ``timeout`` seconds for in-flight passes to finish."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout)
        self._threads = []

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def wait(self) -> None:
        """Block until ``stop()`` is called (from a signal handler, say)."""
        while not self._stop.wait(0.5):
            pass
