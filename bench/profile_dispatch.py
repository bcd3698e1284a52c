"""Profile ``runworker`` delivering webhooks under a storm (not a test).

    .venv/bin/python bench/profile_dispatch.py [--count 4000] [--workers 2] [--py-spy]
                                               [--env UNS_DISPATCH_CONCURRENCY=16 ...]

A throwaway PostgreSQL database; ``count`` notifications accepted in-process (the shape
``bench/run.py`` sends: one webhook channel, ``require_ack``, a ~500 byte body); a local
receiver answering 200 in its own process (``bench/dispatch._Receiver``, so its CPU is not in
the profile); then ``workers`` ``manage.py runworker --poll-interval 0.05`` processes drain the
queue. Prints delivered/s (first to last delivery) with the load average. With ``--py-spy``
the first worker runs under ``py-spy record`` (needs py-spy in .venv: ``uv pip install py-spy``;
not in uv.lock) and the top functions by own time and by total time are printed from its
samples (every thread, idle waits excluded).
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
import uuid

from _common import DEFAULT_PG_URL, ROOT, loadavg, throwaway_database

PY = sys.executable
RECEIVER = ("import sys, time; sys.path.insert(0, 'bench'); from dispatch import _Receiver; r = _Receiver(); "
            "print(r.url, flush=True); time.sleep(10**6)")


def top(collapsed: str, n: int = 25) -> None:
    """Own and total sample counts per function from py-spy's raw (collapsed) output."""
    own, total, samples = collections.Counter(), collections.Counter(), 0
    # py-spy counts a pool thread waiting for work, and the pool's own waits, as active
    idle = ("Condition.wait (threading.py", "EpollSelector.select", "_worker (concurrent/futures/thread.py:81)")
    for line in open(collapsed):
        stack, _, count = line.rstrip().rpartition(" ")
        frames = stack.split(";")
        if frames[-1].startswith(idle) or any("_find_and_load" in f for f in frames):
            continue  # an idle thread, or the process starting
        k = int(count)
        samples += k
        own[frames[-1]] += k
        for frame in set(frames[1:]):
            total[frame] += k
    print(f"  busy samples: {samples}")
    for title, counter in (("own time", own), ("total time", total)):
        print(f"  top by {title}:")
        for frame, k in counter.most_common(n):
            print(f"    {k / samples * 100:5.1f}%  {frame[:150]}")


def _tree(pids):
    """``pids`` and their child processes (py-spy runs the worker as its child)."""
    out = list(pids)
    for pid in pids:
        try:
            out += [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()]
        except OSError:
            pass
    return out


def _cpu_seconds(pid) -> float:
    """User + system CPU seconds of a live process (``/proc``), 0 if it is gone or is py-spy."""
    try:
        if "py-spy" in open(f"/proc/{pid}/cmdline").read():
            return 0.0
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=4000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--py-spy", action="store_true")
    p.add_argument("--gil", action="store_true",
                   help="with --py-spy, sample only the thread holding the GIL (Python's CPU, not its waits)")
    p.add_argument("--top", type=int, default=25, help="with --py-spy, how many functions to print")
    p.add_argument("--env", action="append", default=[], help="NAME=value for the workers")
    p.add_argument("--pg-url", default=DEFAULT_PG_URL)
    a = p.parse_args()
    receiver = subprocess.Popen([PY, "-c", RECEIVER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    url = receiver.stdout.readline().strip()
    try:
        with throwaway_database("postgres", a.pg_url):
            from django.db import connection

            from notifications.models import Channel
            from notifications.runtime import Runtime

            Channel.objects.create(name="bench-hook", kind="webhook", config={"url": url, "timeout": 10})
            rt = Runtime(clock=time.time, callback=None)
            body = {"source": "bench", "severity": "critical", "channels": ["bench-hook"], "require_ack": True,
                    "body": "Your order has shipped. " * 20}
            for i in range(a.count):
                rt.accept("bench", {**body, "title": f"storm {uuid.uuid4().hex} {i}"})

            def count(where):
                with connection.cursor() as cur:
                    cur.execute(f"SELECT count(*) FROM uns_notifications WHERE {where}")
                    return cur.fetchone()[0]

            env = {**os.environ, "UNS_EMBEDDED_WORKER": "false", "UNS_LOG_LEVEL": "WARNING",
                   **dict(kv.split("=", 1) for kv in a.env)}
            out = tempfile.mktemp(suffix=".txt", prefix="uns-pyspy-")
            procs = []
            for i in range(a.workers):
                cmd = [PY, "manage.py", "runworker", "--poll-interval", "0.05"]
                if a.py_spy and i == 0:
                    cmd = [str(ROOT / ".venv/bin/py-spy"), "record", "--format", "raw", "--threads",
                           "-r", "200", "-o", out, *(["--gil"] if a.gil else []), "--", *cmd]
                procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env))
            first = None
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                done = count("status = 'DELIVERED'")
                if first is None and done:
                    first = (time.monotonic(), done, sum(_cpu_seconds(q) for q in _tree([proc.pid for proc in procs])))
                if done >= a.count:
                    break
                time.sleep(0.1)
            end = time.monotonic()
            load = loadavg()
            cpu = sum(_cpu_seconds(q) for q in _tree([proc.pid for proc in procs]))
            for proc in procs:
                proc.send_signal(2)
            for proc in procs:
                proc.wait(60)
            rate = (done - first[1]) / (end - first[0]) if first and end > first[0] else 0.0
            after = (cpu - first[2]) / max(1, done - first[1]) * 1000 if first else 0.0
            print(f"  {done} of {a.count} delivered, {rate:.0f} delivered/s with {a.workers} runworker(s) "
                  f"{' '.join(a.env)}; worker CPU {after:.2f} ms per delivery from the first delivery on "
                  f"({cpu / max(1, done) * 1000:.2f} with start-up) ({load})")
            if a.py_spy and os.path.exists(out):
                top(out, a.top)
    finally:
        receiver.kill()


if __name__ == "__main__":
    main()
