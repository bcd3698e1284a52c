"""``manage.py runworker``: the dispatch, timeout and callback loops (SIGTERM/SIGINT stop them
gracefully, see ``Worker``; ``--once`` runs one pass of each and exits)."""
import json
import logging
import os
import signal
import sys

from django.core.management.base import BaseCommand, CommandError

from notifications.apps import runtime
from notifications.metrics_http import WorkerServer
from notifications.runtime.metrics import track_worker
from notifications.runtime.worker import Worker

# Exit status when a stop left channel attempts running (their rows are recovered after the lease).
EXIT_IN_FLIGHT = 3


class Command(BaseCommand):
    help = (
        "Run the UNS worker loops (dispatch, timeout, callback). "
        "SIGTERM or SIGINT stops claiming; channel attempts already under way may finish for "
        "UNS_STOP_GRACE_SECONDS (default 20 s); finished attempts are settled and claimed rows "
        "whose channels were not attempted are released at once for other workers. Exits 0 "
        f"after a clean stop, {EXIT_IN_FLIGHT} when attempts were still running at the end of the "
        "grace (logged with their ids; those rows are recovered after their lease expires). "
        "A second signal ends the grace at once. While the database is unreachable the loops "
        "back off (0.5 s doubling to 30 s) and log one line when the outage starts and one when "
        "it ends. --metrics-port serves /metrics (Prometheus), /healthz and /readyz."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="run one pass of each loop and exit")
        parser.add_argument("--poll-interval", type=float, default=None, help="seconds to wait when idle")
        parser.add_argument("--stop-grace", type=float, default=None,
                            help="seconds in-flight channel attempts may finish after SIGTERM/SIGINT "
                                 "(default: UNS_STOP_GRACE_SECONDS)")
        parser.add_argument("--metrics-port", type=int, default=None,
                            help="serve /metrics, /healthz and /readyz on this port (0: a free one, "
                                 "printed at start)")
        parser.add_argument("--metrics-host", default="127.0.0.1", help="address of the metrics port "
                            "(default 127.0.0.1)")
        parser.add_argument("--ready-max-age", type=float, default=None,
                            help="/readyz fails when a loop has not finished a pass for this many seconds "
                                 "(default: the larger of 60 and 10 poll intervals)")

    def handle(self, *args, once=False, poll_interval=None, stop_grace=None, metrics_port=None,
               metrics_host="127.0.0.1", ready_max_age=None, **options):
        worker = Worker(runtime(), poll_interval=poll_interval, stop_grace=stop_grace)
        if once:
            self.stdout.write(json.dumps(worker.run_once()))
            _drain_live_push(worker.runtime)
            return
        metrics_server = None
        if metrics_port is not None:  # before the loops: a port in use fails before any claim

            track_worker(worker)
            max_age = ready_max_age if ready_max_age is not None else max(60.0, 10 * worker.poll_interval)
            try:
                metrics_server = WorkerServer(worker, metrics_host, metrics_port, max_age=max_age)
            except OSError as exc:  # port in use, address not local, ...
                raise CommandError(f"cannot serve metrics on {metrics_host}:{metrics_port}: {exc}") from None
            self.stdout.write(f"uns worker metrics on http://{metrics_server.host}:{metrics_server.port}/metrics "
                              "(/healthz, /readyz)")
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: worker.request_stop())
        worker.start()
        self.stdout.write("uns worker running (dispatch, timeout, callback); SIGTERM stops it "
                          f"(grace {worker.stop_grace:g} s)")
        worker.wait()
        clean = worker.stop()
        if metrics_server is not None:
            metrics_server.close()
        _drain_live_push(worker.runtime, timeout=2.0)  # stays within Kubernetes' 30 s
        if not clean:
            self.stderr.write(f"uns worker stopped with attempts still running: {', '.join(worker.in_flight)}")
            # Adapter threads still inside a provider call would hold the interpreter's exit
            # (the thread pool joins them); their rows are left to lease recovery, so leave now.
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            logging.shutdown()
            os._exit(EXIT_IN_FLIGHT)
        self.stdout.write("uns worker stopped")


def _drain_live_push(runtime, timeout: float = 5.0) -> None:
    """Let the live push of the last committed events leave before the process exits (best
    effort: the events are committed either way, and subscribers catch up from the timeline)."""
    drain = getattr(runtime.publish, "drain", None)
    if drain is not None:
        drain(timeout)
