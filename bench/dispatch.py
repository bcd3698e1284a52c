"""Benchmark dispatch: delivered/s and p50/p99 accept-to-delivered latency (not a test).

    .venv/bin/python bench/dispatch.py [--database sqlite|postgres] [--count 1000] [--webhook]

Against a throwaway migrated database, per channel (the real in-process ``console`` channel,
and with ``--webhook`` also a real webhook to a threaded ``http.server`` on 127.0.0.1):

- ``drain``: ``count`` notifications (``--webhook-count`` for the webhook) accepted up front,
  then ``Runtime.dispatch()`` passes until the queue is empty. delivered/s is count / drain
  time; the latency includes the backlog wait.
- ``steady``: a producer thread accepts at ``--rate`` per second (default: half the drain rate)
  while a worker thread runs dispatch passes (sleeping ``--poll`` s when idle); the latency
  (``delivered_at - created_at``) is what one notification waits under that load.
- ``profile`` (console, one adapter thread): SQL statements and wall time per phase of a
  dispatch pass (claim, attempt, settle) per notification, to show where the time goes; and
  ``profile_window``, the same pass with the worker's adapter threads.
"""
import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from _common import Stopwatch, base_parser, environment, fmt_latency, loadavg, throwaway_database


class _Receiver:
    """A threaded HTTP server answering every POST with 200 (the webhook receiver)."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _latencies(ids):
    from notifications.models import Notification

    rows = Notification.objects.filter(id__in=ids).values_list("status", "delivered_at", "notification")
    bad = [s for s, _, _ in rows if s != "DELIVERED"]
    if bad:
        raise SystemExit(f"{len(bad)} notifications not DELIVERED: {set(bad)}")
    return [d - n["created_at"] for _, d, n in rows]


def _accept(rt, channel, count, tag):
    return [rt.accept("bench", {"source": "bench", "title": f"{tag} {i}", "channels": [channel]}).notification.id
            for i in range(count)]


def drain(rt, channel, count):
    ids = _accept(rt, channel, count, f"drain-{channel}")
    passes = 0
    with Stopwatch() as sw:
        while rt.dispatch():
            passes += 1
    lat = _latencies(ids)
    rate = count / sw.seconds
    print(f"  {channel:<8} drain   {count:6d} delivered in {sw.seconds:6.2f} s = {rate:8.1f} delivered/s "
          f"({passes} passes)   accept->delivered {fmt_latency(lat)}")
    return rate


def steady(rt, channel, count, rate, poll):
    from django.db import connections

    stop, errors, ids = threading.Event(), [], []

    def worker():
        try:
            while not stop.is_set():
                if not rt.dispatch():
                    stop.wait(poll)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    t = threading.Thread(target=worker, name="bench-worker")
    t.start()
    interval = 1.0 / rate
    with Stopwatch() as sw:
        start = time.perf_counter()
        for i in range(count):
            delay = start + i * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            ids.extend(_accept(rt, channel, 1, f"steady-{channel}-{i}"))
        from notifications.models import Notification

        while Notification.objects.filter(id__in=ids, status="PENDING").exists() and not errors:
            time.sleep(0.01)
    stop.set()
    t.join()
    if errors:
        raise errors[0]
    lat = _latencies(ids)
    print(f"  {channel:<8} steady  {count:6d} at {rate:6.1f}/s offered, {count / sw.seconds:8.1f} delivered/s"
          f"           accept->delivered {fmt_latency(lat)}")


@contextlib.contextmanager
def _counted(connection, bucket):
    """For the duration, count what runs on ``connection``: each SQL statement (BEGIN and
    savepoints excluded) adds 1 to ``bucket()[0]``, each commit 1 to ``bucket()[2]``; ``bucket``
    returns the ``[statements, seconds, commits]`` list the work at hand is charged to."""
    def counter(execute, sql, params, many, context):
        if not sql.lstrip().upper().startswith(("BEGIN", "SAVEPOINT", "RELEASE SAVEPOINT")):
            bucket()[0] += 1
        return execute(sql, params, many, context)

    real_commit = connection.commit

    def counting_commit():
        bucket()[2] += 1
        return real_commit()

    connection.commit = counting_commit  # atomic() commits through this instance attribute
    try:
        with connection.execute_wrapper(counter):
            yield
    finally:
        del connection.commit


def profile(clock, count):
    """SQL statements and time per notification in each phase of ``Runtime.dispatch`` (console,
    one adapter thread): ``claim`` and ``settle`` (``settle_batch``, per chunk of the window) as
    called by the window, ``attempt`` the rest of the pass (the channel lookup, the lease checks
    and the window's bookkeeping, the adapter calls' own time left out). Statements are counted
    on the pass's connection; the console adapter's inbox writes run on its thread's connection
    and are timed apart, as 'adapter'."""
    from django.db import connection

    from notifications.runtime import Runtime
    from notifications.runtime.dispatch import window

    rt = Runtime(clock=clock, callback=None, concurrency=1)
    _accept(rt, "console", count, "profile")
    phases = {"claim": [0, 0.0, 0], "attempt": [0, 0.0, 0], "settle": [0, 0.0, 0]}
    adapter = [0, 0.0, 0]  # the console adapter's calls (the channel's delivery, not dispatch's)
    current = ["attempt"]
    console = rt.adapters["console"]
    real = {"send": console.send, "claim": window.claim, "settle_batch": window.settle_batch}

    def send(*args, **kwargs):  # on the adapter thread: timed only
        t0 = time.perf_counter()
        try:
            return real["send"](*args, **kwargs)
        finally:
            adapter[1] += time.perf_counter() - t0

    def charged(phase, fn):
        """``fn`` with its statements, commits and time charged to ``phase`` instead of ``attempt``."""
        def run(*args, **kwargs):
            current[0] = phase
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                phases[phase][1] += spent
                phases["attempt"][1] -= spent
                current[0] = "attempt"
        return run

    console.send = send
    window.claim = charged("claim", real["claim"])
    window.settle_batch = charged("settle", real["settle_batch"])
    delivered = 0
    try:
        with _counted(connection, lambda: phases[current[0]]), Stopwatch() as sw:
            while reports := rt.dispatch():
                delivered += sum(r.status == "DELIVERED" for r in reports)
    finally:
        window.claim, window.settle_batch = real["claim"], real["settle_batch"]
    # The pass waits for each adapter call (one thread): that wait is the adapter's, not dispatch's.
    phases["attempt"][1] += sw.seconds - adapter[1]
    total_q = sum(q for q, _, _ in phases.values())
    total_t = sum(t for _, t, _ in phases.values())
    total_c = sum(c for _, _, c in phases.values())
    print(f"  profile: {delivered} console deliveries, batch {rt.batch_size}, one adapter thread "
          "(statements exclude BEGIN/SAVEPOINT; commits counted separately; the console adapter's own "
          "inbox writes run on its thread's connection and are not counted)")
    for name, (q, t, c) in phases.items():
        print(f"    {name:<8} {q / delivered:5.2f} statements + {c / delivered:4.2f} commits per notification  "
              f"{t / delivered * 1000:6.2f} ms/notification ({t / total_t * 100:4.1f}% of time)")
    print(f"    adapter  {adapter[1] / delivered * 1000:6.2f} ms/notification (console inbox writes; not in the total)")
    print(f"    total    {total_q / delivered:5.2f} statements + {total_c / delivered:4.2f} commits per notification  "
          f"{total_t / delivered * 1000:6.2f} ms/notification = {delivered / total_t:.1f} delivered/s")


def profile_window(clock, count, concurrency):
    """Statements and commits per notification of the worker loops' pass (``dispatch`` with a
    stop signal that never fires: the sliding window, console channel, ``concurrency`` adapter
    threads), counted on the pass's own connection (the console adapter's inbox writes run on the
    adapter threads' connections and are not counted, as in ``profile``)."""
    from django.db import connection

    from notifications.runtime import Runtime
    from notifications.runtime import dispatch as d
    from notifications.runtime.worker import StopSignal

    rt = Runtime(clock=clock, callback=None, concurrency=concurrency)
    _accept(rt, "console", count, "profile-window")
    counts = [0, 0.0, 0]  # statements, (unused), commits: _counted's layout
    delivered, stop = 0, StopSignal(60)
    with _counted(connection, lambda: counts), Stopwatch() as sw:
        while reports := d.dispatch(rt, stop=stop):
            delivered += sum(r.status == "DELIVERED" for r in reports)
    print(f"  profile (worker path: sliding window, {concurrency} adapter threads, batch {rt.batch_size}): "
          f"{delivered} console deliveries, {counts[0] / delivered:5.2f} statements + {counts[2] / delivered:4.2f} "
          f"commits per notification, {sw.seconds / delivered * 1000:6.2f} ms/notification")
    return counts[0] / delivered, counts[2] / delivered


def webhook_client_cost(url, count=50):
    """What ``WebhookAdapter.send`` pays per call for building an ``httpx.Client`` (it builds one
    per send), against one POST on a reused client."""
    import httpx

    with Stopwatch() as fresh:
        for _ in range(count):
            with httpx.Client(timeout=10) as client:
                client.post(url, content=b"{}")
    with httpx.Client(timeout=10) as client, Stopwatch() as reused:
        for _ in range(count):
            client.post(url, content=b"{}")
    print(f"  webhook: POST with a new httpx.Client each time {fresh.seconds / count * 1000:6.2f} ms, "
          f"with one reused client {reused.seconds / count * 1000:6.2f} ms ({count} POSTs each)")


def main():
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="notifications in the drain phase (default 1000)")
    parser.add_argument("--steady-count", type=int, default=None,
                        help="notifications in the steady phase (default count/4; 0 skips)")
    parser.add_argument("--rate", type=float, default=None, help="steady offered rate/s (default half the drain rate)")
    parser.add_argument("--poll", type=float, default=0.05, help="steady worker idle sleep in s (default 0.05)")
    parser.add_argument("--batch", type=int, default=50, help="rows claimed per dispatch pass (default 50)")
    parser.add_argument("--concurrency", type=int, default=4, help="adapter threads per batch (default 4)")
    parser.add_argument("--webhook", action="store_true", help="also benchmark a real local HTTP webhook")
    parser.add_argument("--webhook-count", type=int, default=200,
                        help="notifications in the webhook drain phase (default 200; steady uses a quarter)")
    parser.add_argument("--profile-count", type=int, default=300, help="notifications profiled (0 skips)")
    args = parser.parse_args()
    steady_count = args.count // 4 if args.steady_count is None else args.steady_count

    with throwaway_database(args.database, args.pg_url, args.synchronous_commit):
        from notifications.models import Channel
        from notifications.runtime import Runtime

        receiver = _Receiver() if args.webhook else None
        try:
            channels = ["console"]
            if receiver:
                Channel.objects.create(name="bench-hook", kind="webhook", config={"url": receiver.url, "timeout": 10})
                channels.append("bench-hook")
            rt = Runtime(clock=time.time, callback=None, batch_size=args.batch, concurrency=args.concurrency)
            print(f"dispatch benchmark: {environment()}")
            print(f"  batch={args.batch} concurrency={args.concurrency} (adapter threads) poll={args.poll}s "
                  f"lease={rt.lease_seconds:.0f}s clock=time.time, default policy")
            _accept(rt, "console", 20, "warmup")
            while rt.dispatch():
                pass
            for channel in channels:
                count = args.count if channel == "console" else args.webhook_count
                rate = drain(rt, channel, count)
                n_steady = steady_count if channel == "console" else max(1, count // 4) if steady_count else 0
                if n_steady:
                    steady(rt, channel, n_steady, args.rate or max(1.0, rate / 2), args.poll)
            if args.profile_count:
                profile(time.time, args.profile_count)
            if receiver:
                webhook_client_cost(receiver.url)
            print(f"  {loadavg()} at the end")
        finally:
            if receiver:
                receiver.close()


if __name__ == "__main__":
    main()
