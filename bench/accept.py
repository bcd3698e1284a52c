"""Benchmark ``Runtime.accept``: accepted/s and p50/p99 latency (not a test).

    .venv/bin/python bench/accept.py [--database sqlite|postgres] [--count 2000] [--threads 4]

Phases, each on fresh idempotency keys, against a throwaway migrated database:

- ``sequential``: one producer, unique keys (a new leader each, default ``console`` channel);
- ``repeat``: the first count/4 requests again (idempotent repeats: one SELECT, no new state);
- ``dedup``: count/4 accepts over 10 dedup keys (intake locks the ``uns_dedup`` row; mostly
  followers);
- ``threads=N``: count accepts from N producer threads, each its own connection, released by a
  barrier.
"""
import threading
import time

from _common import Stopwatch, base_parser, environment, fmt_latency, loadavg, throwaway_database


def _timed_accepts(rt, requests, principal="bench"):
    latencies = []
    for req in requests:
        t = time.perf_counter()
        rt.accept(principal, req)
        latencies.append(time.perf_counter() - t)
    return latencies


def _report(label, count, seconds, latencies):
    print(f"  {label:<14} {count:6d} accepts in {seconds:6.2f} s = {count / seconds:8.1f} accepted/s   "
          f"{fmt_latency(latencies)}")


def _concurrent(rt, threads, count, tag):
    from django.db import connection, connections

    per = count // threads
    barrier = threading.Barrier(threads + 1)
    latencies, errors = [[] for _ in range(threads)], []

    def producer(i):
        try:
            connection.ensure_connection()
            reqs = [{"source": "bench", "title": f"{tag} {i}-{j}", "idempotency_key": f"{tag}-{i}-{j}"}
                    for j in range(per)]
            barrier.wait()
            latencies[i] = _timed_accepts(rt, reqs, principal=f"producer-{i}")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            barrier.abort()
        finally:
            connections.close_all()

    pool = [threading.Thread(target=producer, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    with Stopwatch() as sw:
        for t in pool:
            t.join()
    if errors:
        raise errors[0]
    return per * threads, sw.seconds, [x for lat in latencies for x in lat]


def main():
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000,
                        help="accepts in the sequential and concurrent phases (default 2000; repeat and dedup use count/4)")
    parser.add_argument("--threads", default="4",
                        help="comma-separated producer thread counts for the concurrent phase (default 4; 0 skips)")
    args = parser.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",") if int(t) > 0]

    with throwaway_database(args.database, args.pg_url, args.synchronous_commit):
        from notifications.runtime import Runtime

        rt = Runtime(clock=time.time, callback=None)
        print(f"accept benchmark: {environment()}")
        print(f"  count={args.count} (repeat, dedup: {max(1, args.count // 4)}), default policy (channel console), "
              "clock=time.time")
        _timed_accepts(rt, [{"source": "warmup", "title": f"w{i}"} for i in range(50)])

        seq = [{"source": "bench", "title": f"seq {i}", "idempotency_key": f"seq-{i}"} for i in range(args.count)]
        with Stopwatch() as sw:
            lat = _timed_accepts(rt, seq)
        _report("sequential", args.count, sw.seconds, lat)

        side = max(1, args.count // 4)
        with Stopwatch() as sw:
            lat = _timed_accepts(rt, seq[:side])
        _report("repeat", side, sw.seconds, lat)

        dedup = [{"source": "bench", "title": f"dup {i}", "idempotency_key": f"dup-{i}", "dedup_key": f"k{i % 10}"}
                 for i in range(side)]
        with Stopwatch() as sw:
            lat = _timed_accepts(rt, dedup)
        _report("dedup(10 keys)", side, sw.seconds, lat)

        for n in thread_counts:
            count, seconds, lat = _concurrent(rt, n, args.count, f"t{n}")
            _report(f"threads={n}", count, seconds, lat)

        from notifications.models import Notification

        print(f"  rows stored: {Notification.objects.count()}; {loadavg()} at the end")


if __name__ == "__main__":
    main()
