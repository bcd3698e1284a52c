"""``manage.py runworker``: the dispatch, timeout and callback loops (SIGTERM/SIGINT stop them
gracefully; ``--once`` runs one pass of each and exits)."""
import json
import signal

from django.core.management.base import BaseCommand

from notifications.runtime import Runtime
from notifications.runtime.worker import Worker


class Command(BaseCommand):
    help = "Run the UNS worker loops (dispatch, timeout, callback)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="run one pass of each loop and exit")
        parser.add_argument("--poll-interval", type=float, default=None, help="seconds to wait when idle")

    def handle(self, *args, once=False, poll_interval=None, **options):
        worker = Worker(Runtime(), poll_interval=poll_interval)
        if once:
            self.stdout.write(json.dumps(worker.run_once()))
            _drain_live_push(worker.runtime)
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: worker.request_stop())
        worker.start()
        self.stdout.write("uns worker running (dispatch, timeout, callback); SIGTERM stops it")
        worker.wait()
        worker.stop()
        _drain_live_push(worker.runtime)
        self.stdout.write("uns worker stopped")


def _drain_live_push(runtime, timeout: float = 5.0) -> None:
    """Let the live push of the last committed events leave before the process exits (best
    effort: the events are committed either way, and subscribers catch up from the timeline)."""
    drain = getattr(runtime.publish, "drain", None)
    if drain is not None:
        drain(timeout)
