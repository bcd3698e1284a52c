"""UNS against the pgbench reference transactions, in the same run, on the same PostgreSQL server.

    .venv/bin/python bench/run.py [--only accept,dispatch,ack,sqlite,growth] [--seconds 10]
                                  [--growth-rows 100000] [--pg-url postgres://...]

UNS runs in the scaled mode (a fresh PostgreSQL database
``uns_bench_<hex>``, an ASGI server started here with ``UNS_EMBEDDED_WORKER=false`` (``--server``:
uvicorn with httptools and websockets-sansio, as the README's scaled recipe runs it, or daphne), two
``manage.py runworker`` processes for dispatch); the reference transactions of
``../shared/perf/pgbench`` (``--ref-dir``) run with pgbench in their own throwaway database
``uns_ref_<hex>`` right after each UNS measurement, at the same client count. Every figure carries
the 1-minute load average taken when it was measured. Load goes to 127.0.0.1 only, bounded in
time (``--seconds`` per measurement) and count (``--max-requests``).

Phases (``--only``, comma-separated; by default all, in this order, each filling what it needs):

- ``accept``: ``POST /api/v1/notifications`` from 1/4/16 concurrent producers (httpx.AsyncClient)
  to one server process, then from 4/16 to ``--web-processes`` processes (daphne: one port each,
  producers spread over them; uvicorn: ``--workers N`` on one port), vs
  ``accept_full.sql`` at the same client counts. Accepts go to a webhook channel pointing at a local
  receiver with ``require_ack``, so they are the dispatch and ACK phases' backlog.
- ``dispatch``: statements and commits per notification (``dispatch.profile``: the window with one
  adapter thread, and ``dispatch.profile_window``: the worker's threads; in-process), then
  end-to-end webhook delivered/s with 2 runworker processes draining a backlog of at least
  ``--dispatch-count`` PENDING rows (accepted first when an earlier phase left fewer), and the
  workers' CPU per delivery (``/proc``, from their first delivery on), vs ``cycle.sql`` at 2
  clients (rows/s = 10 x TPS, after ``reset_q.sql``).
- ``ack``: ``{"action": "ack"}`` over ``/ws/respond/`` from 1/16/64 sockets vs ``ack.sql``.
- ``sqlite``: the embedded mode (``uns_serve`` on a fresh SQLite file, worker loops in-process)
  from 4 producers vs the same-shaped transaction in Python's sqlite3, one connection.
- ``growth``: at 10 k notifications and at ``--growth-rows`` (bulk-loaded with SQL with their
  events, audit rows and chart rollups, ``BULK_SQL``): every ``/ui`` and ``/api/v1`` list with the console's
  defaults and filtered/sorted variants (``growth_paths``, median of sequential GETs), one HTTP
  accept, one ``dispatch.claim`` of 10 and one ACK over ``/ws/respond/`` (medians).

The table is printed and written to ``bench/results/<UTC date>.md``.
"""
import asyncio
import datetime
import glob
import os
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from _common import ROOT, DEFAULT_PG_URL, _with_dbname, append_results, pct, throwaway_database

PY = sys.executable
PHASES = ("accept", "dispatch", "ack", "sqlite", "growth")
ROWS: list[tuple[str, str, str, str, str]] = []  # work, UNS, reference, ratio, load


def load1() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def row(work, uns, ref="", ratio="", load=None):
    ROWS.append((work, uns, ref, ratio, load or load1()))
    print(f"  {work}: {uns}" + (f"  | ref {ref}  | ratio {ratio}" if ref else "") + f"  (load {ROWS[-1][4]})",
          flush=True)


# --- pgbench ------------------------------------------------------------------------------------

class Reference:
    """The reference schema in its own throwaway database, and pgbench runs against it."""

    def __init__(self, pg_url: str, ref_dir: Path):
        import psycopg

        self.ref_dir = ref_dir
        self.pgbench = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"))[-1]
        self.name = f"uns_ref_{uuid.uuid4().hex[:12]}"
        self.admin = _with_dbname(pg_url, "postgres")
        self.url = _with_dbname(pg_url, self.name)
        with psycopg.connect(self.admin, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{self.name}"')
        self.sql("schema.sql")

    def sql(self, file: str) -> None:
        """Run a reference SQL file with psql (it holds VACUUM, which needs autocommit statements)."""
        subprocess.run(["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", "-d", self.url, "-f", str(self.ref_dir / file)],
                       check=True, capture_output=True, timeout=600)

    def scalar(self, query: str):
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(query).fetchone()[0]

    def run(self, script: str, clients: int, seconds: int, **defines) -> tuple[float, float]:
        """``(tps, average latency ms)`` of ``script`` at ``clients`` clients for ``seconds``."""
        parts = urlsplit(self.url)
        cmd = [self.pgbench, "-n", "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds),
               "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432), "-U", parts.username or "postgres",
               "-f", str(self.ref_dir / script)]
        for k, v in defines.items():
            cmd += ["-D", f"{k}={v}"]
        out = subprocess.run(cmd + [self.name], capture_output=True, text=True, timeout=seconds + 120)
        tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out.stdout)
        lat = re.search(r"latency average = ([\d.]+) ms", out.stdout)
        if not tps:
            raise RuntimeError(f"pgbench failed: {out.stdout[-500:]} {out.stderr[-500:]}")
        return float(tps.group(1)), float(lat.group(1)) if lat else float("nan")

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


# --- processes ----------------------------------------------------------------------------------

def free_port() -> int:
    """A free TCP port on 127.0.0.1: the first free one of ``UNS_BENCH_PORTS`` (``low-high``, for a
    shared machine where each user keeps to a range) if set, else one the kernel picks."""
    if os.environ.get("UNS_BENCH_PORTS"):
        low, high = map(int, os.environ["UNS_BENCH_PORTS"].split("-"))
        for port in range(low, high + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
        raise RuntimeError(f"no free port in UNS_BENCH_PORTS={os.environ['UNS_BENCH_PORTS']}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, deadline_s: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {deadline_s:.0f} s")


class Proc:
    """A child process with its output in a log file; stopped with SIGTERM, then SIGKILL."""

    def __init__(self, args, env, name):
        self.log = open(Path(tempfile.gettempdir()) / f"uns-bench-{name}-{os.getpid()}.log", "w")
        self.p = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(10)
        self.log.close()


def child_env(**extra) -> dict:
    env = dict(os.environ)
    env.update({"UNS_LOG_LEVEL": "WARNING", "UNS_CALLBACK_URL": "", **extra})
    return env


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and its descendants (a uvicorn
    supervisor's worker processes), from ``/proc``; 0 for a process that is gone."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


# --- load generators ----------------------------------------------------------------------------

async def _http_load(url, token, producers, seconds, max_requests, body):
    import httpx

    lat, codes = [], {}
    loop = asyncio.get_running_loop()
    headers = {"Authorization": f"Bearer {token}"}
    sent = [0]
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=producers), timeout=30) as client:
        start = loop.time()
        deadline = start + seconds

        async def producer(target):
            while loop.time() < deadline and sent[0] < max_requests:
                sent[0] += 1
                t = time.perf_counter()
                r = await client.post(target, json=body(), headers=headers)
                lat.append(time.perf_counter() - t)
                codes[r.status_code] = codes.get(r.status_code, 0) + 1

        urls = [url] if isinstance(url, str) else list(url)
        await asyncio.gather(*(producer(urls[i % len(urls)]) for i in range(producers)))
        elapsed = loop.time() - start
    return codes, lat, elapsed


def http_load(url, token, producers, seconds, max_requests, body):
    """``(codes, latencies s, elapsed s)`` for ``producers`` concurrent POST loops; ``url`` is one
    URL or a list (producer ``i`` posts to ``url[i % len(url)]``, e.g. one daphne process each)."""
    return asyncio.run(_http_load(url, token, producers, seconds, max_requests, body))


async def _ws_acks(url, token, sockets, ids, seconds):
    import json

    from websockets.asyncio.client import connect

    lat, results = [], {}
    loop = asyncio.get_running_loop()
    conns = [await connect(url, additional_headers={"Authorization": f"Bearer {token}"}) for _ in range(sockets)]
    start = loop.time()
    deadline = start + seconds

    async def one(ws):
        while ids and loop.time() < deadline:
            nid = ids.pop()
            t = time.perf_counter()
            await ws.send(json.dumps({"action": "ack", "request_id": nid, "notification_id": nid}))
            reply = json.loads(await ws.recv())
            lat.append(time.perf_counter() - t)
            key = "ok" if reply.get("ok") else reply.get("error", {}).get("code", "error") if isinstance(
                reply.get("error"), dict) else "error"
            results[key] = results.get(key, 0) + 1

    try:
        await asyncio.gather(*(one(ws) for ws in conns))
    finally:
        elapsed = loop.time() - start
        for ws in conns:
            await ws.close()
    return results, lat, elapsed


def accept_batches(accept_url: str, work: str = "accept") -> tuple[float, float]:
    """``(requests, transactions)`` so far of the group commit of ``work`` (accept, ack) in the
    server behind ``accept_url`` (its ``/metrics``: ``uns_group_commit_batch_size{work}`` sum and
    count; one process's own counters)."""
    import httpx

    text = httpx.get(accept_url.replace("/api/v1/notifications", "/metrics"), timeout=10).text
    found = dict(re.findall(rf'^uns_group_commit_batch_size_(sum|count)\{{work="{work}"\}} ([\d.e+]+)$', text, re.M))
    return float(found.get("sum", 0)), float(found.get("count", 0))


def per_request_ms(cpu_seconds: float, requests: int) -> str:
    return f"{cpu_seconds / requests * 1000:.2f} ms/req" if requests else "n/a"


def ms(seconds_list, p):
    return pct(seconds_list, p) * 1000


def accept_body(channel="bench-hook", require_ack=True):
    def body():
        return {"source": "bench", "title": f"storm {uuid.uuid4().hex}", "severity": "critical",
                "channels": [channel], "require_ack": require_ack,
                "body": "Your order has shipped. " * 20}
    return body


# --- the run --------------------------------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.args = args
        self.ref = None
        self.server = None
        self.receiver = None

    def setup(self):
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from knox.models import AuthToken

        from dispatch import _Receiver
        from notifications.models import Channel

        self.receiver = _Receiver()
        Channel.objects.create(name="bench-hook", kind="webhook", config={"url": self.receiver.url, "timeout": 10})
        user = get_user_model().objects.create(username="bench")
        user.groups.add(*Group.objects.all())
        _, self.token = AuthToken.objects.create(user=user, expiry=None)
        self.db_url = os.environ["DATABASE_URL"]
        self.env = child_env(DATABASE_URL=self.db_url, UNS_EMBEDDED_WORKER="false",
                             REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
                             UNS_CHANNEL_PREFIX=f"uns-bench-{uuid.uuid4().hex[:8]}")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.server = Proc(self.server_cmd(self.port), self.env, self.args.server)
        wait_http(self.base + "/healthz")
        self.ref = Reference(self.args.pg_url, self.args.ref_dir)

    def close(self):
        for thing in (self.server,):
            if thing:
                thing.stop()
        if self.receiver:
            self.receiver.close()
        if self.ref:
            self.ref.drop()

    def server_cmd(self, port: int, workers: int = 1) -> list[str]:
        """The command line of a web server on ``port`` (``--server``); ``workers`` > 1 only for
        uvicorn (``--workers``: processes behind one port)."""
        if self.args.server == "uvicorn":
            return [PY, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port), "--ws", "websockets-sansio",
                    "--ws-per-message-deflate", "false", "--http", "httptools", "--log-level", "warning", "--no-access-log",
                    "--workers", str(workers), "uns_project.asgi:application"]
        assert workers == 1, "daphne serves one process per port"
        return [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "uns_project.asgi:application"]

    def count(self, where="TRUE") -> int:
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM uns_notifications WHERE {where}")
            return cur.fetchone()[0]

    def fill(self, n, where="TRUE"):
        """At least ``n`` accepted notifications matching ``where`` (16 producers through the
        server; a new accept is PENDING)."""
        missing = n - self.count(where)
        if missing > 0:
            http_load(self.base + "/api/v1/notifications", self.token, 16, 600, missing, accept_body())

    # phases -------------------------------------------------------------------------------
    def accept(self):
        a = self.args
        urls = [self.base + "/api/v1/notifications"]
        extra = []
        try:
            sets = [(1, (1, 4, 16))] + ([(a.web_processes, (4, 16))] if a.web_processes > 1 else [])
            servers = [self.server]
            for processes, counts in sets:
                if processes > 1 and a.server == "uvicorn":  # N processes behind one port
                    port = free_port()
                    servers = [Proc(self.server_cmd(port, processes), self.env, f"uvicorn-{port}")]
                    extra.extend(servers)
                    wait_http(f"http://127.0.0.1:{port}/healthz")
                    urls = [f"http://127.0.0.1:{port}/api/v1/notifications"]
                while len(urls) < processes:  # more daphnes, one port each; producers spread over them
                    port = free_port()
                    servers.append(Proc(self.server_cmd(port), self.env, f"daphne-{port}"))
                    extra.append(servers[-1])
                    wait_http(f"http://127.0.0.1:{port}/healthz")
                    urls.append(f"http://127.0.0.1:{port}/api/v1/notifications")
                if processes > 1:  # warm the new processes (imports, pools) before they are measured
                    http_load(urls, self.token, 2 * processes, 2, 400, accept_body())
                for producers in counts:
                    batches0 = accept_batches(urls[0]) if processes == 1 else None
                    cpu0 = sum(tree_cpu(s.p.pid) for s in servers)
                    codes, lat, elapsed = http_load(urls, self.token, producers, a.seconds, a.max_requests,
                                                    accept_body())
                    cpu = sum(tree_cpu(s.p.pid) for s in servers) - cpu0
                    batched = ""
                    if batches0 is not None:
                        (s1, c1), (s0, c0) = accept_batches(urls[0]), batches0
                        batched = f", {(s1 - s0) / max(1.0, c1 - c0):.1f} accepts per commit"
                    load = load1()
                    rate = codes.get(202, 0) / elapsed
                    tps, ref_lat = self.ref.run("accept_full.sql", producers, a.seconds)
                    others = {k: v for k, v in codes.items() if k != 202}
                    row(f"HTTP accept, scaled ({a.server} x{processes}), {producers} producer(s)",
                        f"{rate:.0f}/s, p50 {ms(lat, 50):.1f} ms, p99 {ms(lat, 99):.0f} ms"
                        + f", server CPU {per_request_ms(cpu, sum(codes.values()))}" + batched
                        + (f", other {others}" if others else ""),
                        f"{tps:.0f} TPS, avg {ref_lat:.1f} ms", f"{rate / tps:.3f}", load)
        finally:
            for proc in extra:
                proc.stop()

    def dispatch(self):
        from dispatch import profile

        a = self.args
        # The backlog is PENDING rows: an earlier phase (ack, run first) may have delivered every
        # row there was, so the count of all rows says nothing about what is left to deliver
        # (that was the "0 of 0 delivered" of earlier runs).
        self.fill(a.dispatch_count, "status = 'PENDING'")
        pending = self.count("status = 'PENDING'")
        if pending == 0:
            raise RuntimeError("dispatch: no PENDING backlog to deliver")
        workers = [Proc([PY, "manage.py", "runworker", "--poll-interval", "0.05"], self.env, f"worker{i}")
                   for i in range(2)]
        try:
            start_delivered = self.count("status = 'DELIVERED'")
            deadline = time.monotonic() + max(a.seconds * 6, 120)
            first = None  # (monotonic, delivered, workers' CPU seconds) at the first delivery seen
            done = start_delivered
            while time.monotonic() < deadline:
                done = self.count("status = 'DELIVERED'")
                if first is None and done > start_delivered:  # the workers' start-up is not measured
                    first = (time.monotonic(), done, sum(tree_cpu(w.p.pid) for w in workers))
                if self.count("status IN ('PENDING', 'LEASED')") == 0:
                    break
                time.sleep(0.25)
            end = time.monotonic()
            cpu = sum(tree_cpu(w.p.pid) for w in workers) - (first[2] if first else 0.0)
            load = load1()
        finally:
            for w in workers:
                w.stop()
        measured = done - first[1] if first else 0
        rate = measured / (end - first[0]) if first and end > first[0] else 0.0
        self.ref.sql("reset_q.sql")
        tps, _ = self.ref.run("cycle.sql", 2, a.seconds)
        row(f"dispatch end to end, webhook, runworker x2 ({done - start_delivered} of {pending} delivered)",
            f"{rate:.0f} delivered/s, worker CPU {per_request_ms(cpu, measured).replace('req', 'delivery')}",
            f"{tps * 10:.0f} rows/s (cycle.sql, 2 clients)", f"{rate / (tps * 10):.3f}", load)
        import io
        from contextlib import redirect_stdout

        buf = io.StringIO()
        with redirect_stdout(buf):
            profile(time.time, a.profile_count)
        total = [line for line in buf.getvalue().splitlines() if line.strip().startswith("total")]
        print(buf.getvalue())
        if total:
            m = re.search(r"([\d.]+) statements \+\s*([\d.]+) commits per notification\s+([\d.]+) ms", total[0])
            row("dispatch cost per notification (console, window of 1 adapter thread, batch 50)",
                f"{m.group(1)} statements + {m.group(2)} commits, {m.group(3)} ms",
                "0.2 statements + 0.1 commits (cycle.sql)", f"{0.2 / float(m.group(1)):.2f} (statements)")
        from django.conf import settings

        from dispatch import profile_window

        width = settings.UNS_DISPATCH_CONCURRENCY
        stmts, commits = profile_window(time.time, a.profile_count, width)
        row(f"dispatch cost per notification (console, worker path: window of {width} threads, batch 50)",
            f"{stmts:.2f} statements + {commits:.2f} commits", "0.2 statements + 0.1 commits (cycle.sql)",
            f"{0.2 / stmts:.2f} (statements)")

    def ack(self):
        a = self.args
        levels = (1, 16, 64)
        need = a.ack_count
        ids = self._ackable()
        if len(ids) < need:
            self.fill(self.count() + need - len(ids))
            workers = [Proc([PY, "manage.py", "runworker", "--poll-interval", "0.05"], self.env, f"ackw{i}")
                       for i in range(2)]
            try:
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline and self.count("status IN ('PENDING', 'LEASED')"):
                    time.sleep(0.5)
            finally:
                for w in workers:
                    w.stop()
            ids = self._ackable()
        maxid = self.ref.scalar("SELECT coalesce(max(id), 0) FROM notification")
        if maxid == 0:
            self.ref.run("accept_full.sql", 4, 3)
            maxid = self.ref.scalar("SELECT max(id) FROM notification")
        per = max(1, len(ids) // len(levels))
        for sockets in levels:
            chunk, ids = ids[:per], ids[per:]
            batches0 = accept_batches(self.base + "/api/v1/notifications", "ack")
            cpu0 = tree_cpu(self.server.p.pid)
            results, lat, elapsed = asyncio.run(_ws_acks(f"ws://127.0.0.1:{self.port}/ws/respond/", self.token,
                                                         sockets, chunk, a.seconds))
            cpu = tree_cpu(self.server.p.pid) - cpu0
            (s1, c1), (s0, c0) = accept_batches(self.base + "/api/v1/notifications", "ack"), batches0
            load = load1()
            ok = results.get("ok", 0)
            tps, ref_lat = self.ref.run("ack.sql", sockets, a.seconds, maxid=maxid)
            others = {k: v for k, v in results.items() if k != "ok"}
            row(f"ACK over /ws/respond/ ({a.server}), {sockets} socket(s)",
                f"{ok / elapsed:.0f}/s, p50 {ms(lat, 50):.1f} ms, p99 {ms(lat, 99):.0f} ms"
                f", server CPU {per_request_ms(cpu, sum(results.values()))}"
                f", {(s1 - s0) / max(1.0, c1 - c0):.1f} ACKs per commit"
                + (f", other {others}" if others else ""),
                f"{tps:.0f} TPS (ack.sql), avg {ref_lat:.1f} ms", f"{ok / elapsed / tps:.3f}", load)

    def _ackable(self) -> list[str]:
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("SELECT id FROM uns_notifications WHERE ack_status = 'PENDING' AND status = 'DELIVERED'")
            return [r[0] for r in cur.fetchall()]

    def growth(self):
        """Each figure at 10 k notifications and at ``--growth-rows`` (``BULK_SQL``: history that
        grows, active sets as they are at a steady rate): one accept, claim and ACK, and every
        ``/ui`` and ``/api/v1`` list with the console's default and filtered/sorted parameters."""
        import httpx
        from django.db import connection

        a = self.args
        self.fill(1)
        headers = {"Authorization": f"Bearer {self.token}"}
        figures: dict[tuple[str, int], tuple[float, str]] = {}
        names: list[str] = []

        def record(name, target, times):
            if name not in names:
                names.append(name)
            figures[(name, target)] = (statistics.median(times) * 1000, load1())

        sizes = {}  # target -> the rows the table had when measured
        for target in (10_000, a.growth_rows):
            loaded = self.count("principal = 'bench-bulk'")
            missing = target - self.count()
            if loaded == 0:
                # The earlier phases may have filled past 10 k already: still bulk-load some rows,
                # so the dead letters and audit rows the paths read exist at both sizes.
                missing = max(missing, 1000)
            if missing > 0:
                t = time.perf_counter()
                from notifications.runtime import counts, series

                now = time.time()
                with connection.cursor() as cur:
                    for sql in BULK_SQL:
                        cur.execute(sql, {"first": loaded + 1, "last": loaded + missing,
                                          "now": now, "hook": "bench-hook"})
                    # The charts' rollups of this size's history, written anew (see SERIES_SQL).
                    cur.execute("DELETE FROM uns_series_rollups")
                    cur.execute(SERIES_SQL, {"n": loaded + missing, "span": SERIES_SPAN_SECONDS, "now": now,
                                             "hook": "bench-hook"})
                counts.compact(0)
                series.compact(time.time())  # as the worker's timeout loop folds closed buckets
                with connection.cursor() as cur:
                    # After the folds, as autovacuum would: the folds' dead rows gone, statistics fresh.
                    for table in GROWTH_TABLES:
                        cur.execute(f"VACUUM ANALYZE {table}" if connection.get_autocommit() else f"ANALYZE {table}")
                    # Write the load's dirty pages out now, not during the figures (a checkpoint
                    # spread over the next minutes slows every commit's WAL flush).
                    cur.execute("CHECKPOINT")
                print(f"  bulk-loaded {missing} notifications (+ events, audit) in {time.perf_counter() - t:.1f} s",
                      flush=True)
            sizes[target] = self.count()
            sample = self._growth_sample()
            with httpx.Client(base_url=self.base, headers=headers, timeout=60) as client:
                paths = growth_paths(sample)
                times = {name: [] for name, _ in paths}
                # Round-robin, so a burst of load on the shared machine falls on every path alike
                # (the controls below stay comparable with the rest).
                for i in range(a.growth_samples + 1):
                    for name, path in paths:
                        t = time.perf_counter()
                        r = client.get(path)
                        if i:  # the first round warms
                            times[name].append(time.perf_counter() - t)
                        if r.status_code != 200:
                            raise RuntimeError(f"{path}: {r.status_code} {r.text[:300]}")
                for name, _ in paths:
                    record(f"GET {name}", target, times[name])
                body = accept_body()
                client.post("/api/v1/notifications", json=body())
                times = []
                for _ in range(a.growth_samples):
                    t = time.perf_counter()
                    r = client.post("/api/v1/notifications", json=body())
                    times.append(time.perf_counter() - t)
                    if r.status_code != 202:
                        raise RuntimeError(f"accept: {r.status_code} {r.text[:300]}")
                record("POST /api/v1/notifications (one accept)", target, times)
            record("dispatch.claim, batch of 10", target, self._claim_times(a.growth_samples))
            ids = self._make_rows("ack", a.growth_samples + 1)
            results, lat, _ = asyncio.run(_ws_acks(f"ws://127.0.0.1:{self.port}/ws/respond/", self.token, 1,
                                                   ids, 60))
            if results.get("ok", 0) != len(lat) or not lat:
                raise RuntimeError(f"ack: {results}")
            record("ACK over /ws/respond/ (1 socket)", target, lat[1:])
        def ratio(name):
            return figures[(name, a.growth_rows)][0] / figures[(name, 10_000)][0]

        # The machine's load moves every figure; these read nothing that grows with the table, so
        # their ratio is the load's, and each ratio is also given divided by it.
        control = statistics.median(ratio(f"GET {p}") for p in GROWTH_CONTROLS)
        for name in names:
            small, big = figures[(name, 10_000)], figures[(name, a.growth_rows)]
            row(f"growth: {name}, {sizes[10_000] // 1000}k -> {sizes[a.growth_rows] // 1000}k rows",
                f"{small[0]:.1f} ms -> {big[0]:.1f} ms (median)", "",
                f"x{ratio(name):.2f} (x{ratio(name) / control:.2f} / controls x{control:.2f})",
                f"{small[1]} / {big[1]}")

    def _growth_sample(self) -> dict:
        """Ids the detail and filtered paths name: a dead letter, a bulk action over the DLQ."""
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("SELECT id FROM uns_notifications WHERE principal = 'bench-bulk' AND dead_letter "
                        "ORDER BY id LIMIT 1")
            dead = cur.fetchone()[0]
        return {"dead": dead, "now": time.time(), "bulk": self._bulk_action()}

    def _bulk_action(self) -> str:
        """A bulk resolve of the DLQ's ``source=db`` rows (created once, never run)."""
        import httpx

        if getattr(self, "_bulk_id", None):
            return self._bulk_id
        with httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {self.token}"}, timeout=60) as c:
            n = c.get("/ui/bulk-actions/preview?action=resolve&source=db").json()["matched"]
            r = c.post("/api/v1/bulk-actions", json={"action": "resolve", "filter": {"source": "db"},
                                                     "expected": min(n, 500)})
            if r.status_code >= 300:
                raise RuntimeError(f"bulk action: {r.status_code} {r.text[:300]}")
            self._bulk_id = r.json()["id"]
        return self._bulk_id

    def _make_rows(self, kind: str, n: int) -> list[str]:
        """``n`` fresh copies of the template notification: ``"due"`` PENDING and due (what a
        claim takes first), ``"ack"`` DELIVERED awaiting an ACK. Their ids."""
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute(MAKE_ROWS_SQL, {"n": n, "now": time.time(), "kind": kind})
            return [r[0] for r in cur.fetchall()]

    def _claim_times(self, samples: int) -> list[float]:
        """Seconds per ``dispatch.claim(runtime, 10)`` (in this process, the real clock), each
        over 10 rows made due just before."""
        from notifications.runtime import Runtime, dispatch

        rt = Runtime(clock=time.time, callback=None)
        times = []
        for _ in range(samples + 1):
            self._make_rows("due", 10)
            t = time.perf_counter()
            got = dispatch.claim(rt, 10)
            times.append(time.perf_counter() - t)
            if len(got) != 10:
                raise RuntimeError(f"claim took {len(got)} rows, not 10")
        return times[1:]

    def sqlite(self):
        a = self.args
        tmp = tempfile.mkdtemp(prefix="uns-bench-sqlite-")
        env = child_env(DATABASE_URL=f"sqlite:///{tmp}/uns.sqlite3", UNS_EMBEDDED_WORKER="true")
        env.pop("REDIS_URL", None)
        subprocess.run([PY, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True,
                       timeout=300)
        token = subprocess.run([PY, "-c", SQLITE_SETUP], cwd=ROOT, env=env, check=True, capture_output=True,
                               text=True, timeout=120).stdout.strip().splitlines()[-1]
        port = free_port()
        server = Proc([PY, "manage.py", "uns_serve", "--port", str(port)], env, "uns_serve")
        try:
            url = f"http://127.0.0.1:{port}/api/v1/notifications"
            wait_http(f"http://127.0.0.1:{port}/healthz")
            batched0, cpu0 = accept_batches(url), tree_cpu(server.p.pid)
            codes, lat, elapsed = http_load(url, token, 4, a.seconds, a.max_requests, accept_body("console", False))
            cpu, batched = tree_cpu(server.p.pid) - cpu0, accept_batches(url)
            load = load1()
            delivered = sqlite3.connect(f"{tmp}/uns.sqlite3").execute(
                "SELECT count(*) FROM uns_notifications WHERE status = 'DELIVERED'").fetchone()[0]
        finally:
            server.stop()
        rate = codes.get(202, 0) / elapsed
        commits = batched[1] - batched0[1]
        per_commit = f", {(batched[0] - batched0[0]) / commits:.1f} accepts/commit" if commits else ""
        ref = sqlite_reference(tmp, a.seconds)
        others = {k: v for k, v in codes.items() if k != 202}
        row(f"embedded SQLite (uns_serve), 4 producers ({delivered} delivered meanwhile)",
            f"{rate:.0f}/s, p50 {ms(lat, 50):.1f} ms, p99 {ms(lat, 99):.0f} ms, server CPU "
            f"{per_request_ms(cpu, codes.get(202, 0))} (delivery included){per_commit}"
            + (f", other {others}" if others else ""),
            f"{ref:.0f} tx/s (Python sqlite3, 1 connection)", f"{rate / ref:.3f}", load)


SQLITE_SETUP = """
import django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "uns_project.settings")
django.setup()
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from knox.models import AuthToken
user = get_user_model().objects.create(username="bench")
user.groups.add(*Group.objects.all())
print(AuthToken.objects.create(user=user, expiry=None)[1])
"""

# The growth phase's bulk load: notifications g = first..last (named ids, accepted g seconds
# before ``now``, so the newest hour is the same at every size and the history grows behind it),
# copies of the first accepted notification with their events and audit rows as the runtime
# writes them. History grows with the table: 1 % dead letters (FAILED, dead_letter, ``failed_at``
# and a FAILED delivery audit row at the settle time), 25 % ACKED (an ack audit row), the rest
# DELIVERED, each with ACCEPTED, CHANNEL_ATTEMPT_RESULT and DELIVERY_RESULT events and a delivery
# audit row. Active sets stay as a steady rate leaves them: pending ACKs only among the newest
# 4,000 (deadlines pass), the last hour's attempts only among the newest 3,600. Event and audit
# ids are in insertion order (ids are opaque; a random one per row only slows the load).
_BULK_ROWS = """
FROM generate_series(%(first)s::int, %(last)s::int) AS g,
LATERAL (SELECT (md5('uns-bench-n' || g)::uuid)::text AS nid, %(now)s::float8 - g AS at,
                g %% 100 = 0 AS dl, g %% 20 = 1 AND g <= 4000 AS ackp, g %% 4 = 2 AS acked,
                (ARRAY['bench', 'payments', 'db', 'web'])[1 + (g + g / 100) %% 4] AS src,
                (ARRAY['critical', 'high', 'warning', 'info'])[1 + (g / 4) %% 4] AS sev,
                CASE WHEN g %% 300 = 0 THEN 'timed out after 10 s' ELSE 'HTTP 500 from 127.0.0.1:9' END AS err) AS c,
     (SELECT notification::jsonb AS n, fingerprint FROM uns_notifications WHERE principal = 'bench'
       ORDER BY id LIMIT 1) AS t
"""
BULK_SQL = [
    """
INSERT INTO uns_notifications (id, key, fingerprint, principal, notification, status, outcome, attempts, cycle,
    cycle_attempts, dedup_key, dedup_owner_id, dedup_generation, dedup_successor_id, next_attempt, lease_until,
    lease_token, dead_letter, delivered_at, deadline, ack_status, actor, responded_at, response_metadata, failed_at)
SELECT c.nid, md5('uns-bench-k' || g), t.fingerprint, 'bench-bulk',
    t.n || jsonb_build_object('created_at', c.at, 'title', 'storm ' || g, 'source', c.src, 'severity', c.sev),
    CASE WHEN c.dl THEN 'FAILED' ELSE 'DELIVERED' END,
    jsonb_build_object('channels_attempted', jsonb_build_array(%(hook)s),
        'channels_succeeded', CASE WHEN c.dl THEN '[]'::jsonb ELSE jsonb_build_array(%(hook)s) END,
        'channels_failed', CASE WHEN c.dl THEN jsonb_build_array(%(hook)s) ELSE '[]'::jsonb END,
        'error_message', CASE WHEN c.dl THEN %(hook)s || ': ' || c.err END),
    CASE WHEN c.dl THEN 3 ELSE 1 END, 1, CASE WHEN c.dl THEN 3 ELSE 1 END, NULL, NULL, NULL, NULL, c.at, c.at + 1,
    NULL, c.dl, CASE WHEN c.dl THEN NULL ELSE c.at + 1 END,
    CASE WHEN c.ackp THEN %(now)s::float8 + 86400 - g WHEN c.acked AND NOT c.dl THEN c.at + 600 END,
    CASE WHEN c.dl THEN NULL WHEN c.ackp THEN 'PENDING' WHEN c.acked THEN 'ACKED' END,
    CASE WHEN c.acked AND NOT c.dl AND NOT c.ackp THEN 'bench' END,
    CASE WHEN c.acked AND NOT c.dl AND NOT c.ackp THEN c.at + 30 END, NULL, CASE WHEN c.dl THEN c.at + 1 END
""" + _BULK_ROWS,
    """
INSERT INTO uns_events (id, notification_id, kind, at, payload, callback_pending, callback_until, callback_token,
    callback_attempts, callback_error)
SELECT 'be000000-0000-4000-8000-' || lpad(to_hex(g * 4 + k), 12, '0'), c.nid,
    (ARRAY['ACCEPTED', 'CHANNEL_ATTEMPT_RESULT', 'DELIVERY_RESULT'])[k], c.at + CASE WHEN k = 1 THEN 0 ELSE 1 END,
    CASE k WHEN 1 THEN jsonb_build_object('policy_revision', 1)
           WHEN 2 THEN jsonb_build_object('channel', %(hook)s, 'success', NOT c.dl, 'attempt', 1, 'cycle', 1,
                                          'cycle_attempt', 1, 'error', CASE WHEN c.dl THEN c.err END)
           ELSE jsonb_build_object('status', CASE WHEN c.dl THEN 'FAILED' ELSE 'DELIVERED' END, 'attempt', 1,
                                   'cycle', 1, 'cycle_attempt', 1, 'dead_letter', c.dl) END,
    false, 0, NULL, 0, NULL
""" + _BULK_ROWS + ", generate_series(1, 3) AS k",
    """
INSERT INTO notification_audit_records (id, notification_id, notification_type, status, channels_attempted,
    channels_succeeded, channels_failed, error_message, intent, delivery_mode, autonomy_mode, agent_id,
    policy_config_id, policy_config_hash, delivered_at, created_at)
SELECT 'ba000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'), c.nid, 'notification', CASE WHEN c.dl THEN 'FAILED' ELSE 'DELIVERED' END,
    jsonb_build_array(%(hook)s), CASE WHEN c.dl THEN '[]'::jsonb ELSE jsonb_build_array(%(hook)s) END,
    CASE WHEN c.dl THEN jsonb_build_array(%(hook)s) ELSE '[]'::jsonb END, CASE WHEN c.dl THEN c.err END, NULL,
    coalesce(t.n #>> '{metadata,uns_resolution,effective,delivery_mode}', 'GUARANTEED'), NULL, NULL,
    t.n #>> '{metadata,uns_resolution,policy_id}', t.n #>> '{metadata,uns_resolution,policy_hash}',
    CASE WHEN c.dl THEN NULL ELSE c.at + 1 END, c.at + 1
""" + _BULK_ROWS,
    """
INSERT INTO ack_audit_records (id, notification_id, old_status, new_status, acked_by, acked_at, ack_metadata,
    created_at)
SELECT 'br000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'), c.nid, 'PENDING', 'ACKED', 'bench', c.at + 30, NULL, c.at + 30
""" + _BULK_ROWS + " WHERE c.acked AND NOT c.dl AND NOT c.ackp",
    # The people audit: one action per notification, 30 s after its acceptance, by one of 20
    # people; 1 % resolves (the dead letters), 1 % replays, 2 % channel changes, 2 % policy
    # activations, the rest ACK / dismiss / snooze; 200 items of one bulk action among the
    # newest 2,000 (a bulk action is bounded, it does not grow with the history).
    """
INSERT INTO uns_people_audit_records (id, at, actor, action, object_type, object_id, object_title, bulk_action_id,
    detail)
SELECT 'bp000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'), c.at + 30, 'oncall-' || (g %% 20), a.action,
    CASE a.action WHEN 'CHANNEL_UPDATED' THEN 'channel' WHEN 'POLICY_ACTIVATED' THEN 'policy' ELSE 'notification' END,
    CASE a.action WHEN 'CHANNEL_UPDATED' THEN %(hook)s WHEN 'POLICY_ACTIVATED' THEN 'uns-default' ELSE c.nid END,
    CASE a.action WHEN 'CHANNEL_UPDATED' THEN %(hook)s || ' (webhook)' WHEN 'POLICY_ACTIVATED' THEN 'uns-default v2'
                  ELSE 'storm ' || g END,
    CASE WHEN g %% 10 = 3 AND g <= 2000 THEN 'bench-bulk-audit' END, '{}'::jsonb
""" + _BULK_ROWS + """, LATERAL (SELECT CASE WHEN g %% 100 = 0 THEN 'FAILURE_RESOLVED' WHEN g %% 100 = 50 THEN 'REPLAY_REQUESTED'
    WHEN g %% 50 = 1 THEN 'CHANNEL_UPDATED' WHEN g %% 50 = 3 THEN 'POLICY_ACTIVATED' WHEN g %% 4 = 2 THEN 'ACKED'
    WHEN g %% 4 = 0 THEN 'DISMISSED' ELSE 'SNOOZED' END AS action) AS a""",
]
# The charts' rollups (``uns_series_rollups``, ``runtime.series``) of a history of ``n``
# notifications spread evenly over the ``span`` seconds before ``now`` (8 days: every bucket of
# the 1 h, 24 h and 7 d windows holds some), as the runtime writes them with their events: per
# step (60, 600, 3600 s) and bucket, accepted at ``at``; delivered with its latency (1 s: bin 27,
# ``series.latency_bin(1.0)``), or 1 % dead-lettered, failed and +1 DLQ, and the channel's
# attempt (and failure) at ``at + 1``; 5 % +1 pending ACK; in 8 shards (``g % 8``), as several
# writers spread them, which the load then folds as the worker does. Written anew at each size
# by the same statement, so the two sizes differ in the counts behind each bucket and not in the
# window's rows. (Spread at one per second like the notifications, 10 k would fill 3 of the 7 d
# window's 168 buckets and 1 M all of them: the figure would compare a short answer with a full
# one.) The rollups are independent of the notification rows, as in the runtime (the DLQ and
# pending-ACK gauges are anchored to the live counts at read time).
SERIES_SPAN_SECONDS = 8 * 86400
SERIES_SQL = """
INSERT INTO uns_series_rollups (step, bucket, series, label, shard, n)
SELECT s.step, (floor(v.at / s.step) * s.step)::bigint, v.series, v.label, g %% 8, count(*)
FROM generate_series(1, %(n)s::int) AS g,
LATERAL (SELECT %(now)s::float8 - g * (%(span)s::float8 / %(n)s::int) AS at, g %% 100 = 0 AS dl) AS c,
LATERAL (VALUES ('accepted', '', c.at, true), ('delivered', '', c.at + 1, NOT c.dl),
                ('latency', '27', c.at + 1, NOT c.dl), ('dead_lettered', '', c.at + 1, c.dl),
                ('failed', '', c.at + 1, c.dl), ('dlq', '', c.at + 1, c.dl), ('ack_pending', '', c.at + 1, g %% 20 = 1),
                ('channel_attempts', %(hook)s, c.at + 1, true), ('channel_failures', %(hook)s, c.at + 1, c.dl))
    AS v(series, label, at, keep),
(VALUES (60), (600), (3600)) AS s(step)
WHERE v.keep
GROUP BY 1, 2, 3, 4, 5
"""
# Paths whose reads do not grow with the notifications (the growth phase's load control).
GROWTH_CONTROLS = ("/ui/me", "/api/v1/channels", "/api/v1/policies/revisions")
GROWTH_TABLES = ("uns_notifications", "uns_events", "notification_audit_records", "ack_audit_records",
                 "uns_people_audit_records", "uns_series_rollups")

# Fresh copies of the template for the claim (``due``: PENDING, due before anything else) and the
# ACK (``ack``: DELIVERED, awaiting a response) figures.
MAKE_ROWS_SQL = """
INSERT INTO uns_notifications (id, key, fingerprint, principal, notification, status, outcome, attempts, cycle,
    cycle_attempts, dedup_key, dedup_owner_id, dedup_generation, dedup_successor_id, next_attempt, lease_until,
    lease_token, dead_letter, delivered_at, deadline, ack_status, actor, responded_at, response_metadata)
SELECT gen_random_uuid()::text, md5(random()::text || g), t.fingerprint, t.principal,
    t.notification::jsonb || jsonb_build_object('created_at', %(now)s::float8 - 1, 'title', 'fresh ' || g),
    CASE WHEN %(kind)s = 'due' THEN 'PENDING' ELSE 'DELIVERED' END, t.outcome, 0, 1, 0, NULL, NULL, NULL, NULL,
    %(now)s::float8 - 100000, 0, NULL, false, CASE WHEN %(kind)s = 'ack' THEN %(now)s::float8 END,
    CASE WHEN %(kind)s = 'ack' THEN %(now)s::float8 + 86400 END, CASE WHEN %(kind)s = 'ack' THEN 'PENDING' END,
    NULL, NULL, NULL
FROM (SELECT * FROM uns_notifications WHERE principal = 'bench' ORDER BY id LIMIT 1) AS t, generate_series(1, %(n)s) AS g
RETURNING id
"""


def growth_paths(sample: dict) -> list[tuple[str, str]]:
    """``(name, path)`` of every ``/ui`` and ``/api/v1`` GET the growth phase times: each list with
    the console's defaults and the filtered or sorted variants it uses, and the detail reads."""
    dead, bulk, hour_ago = sample["dead"], sample["bulk"], int(sample["now"] - 3600)
    paths = [
        "/ui/overview", "/ui/inbox", "/ui/inbox?source=bench", "/ui/inbox/groups?by=source",
        "/ui/notifications", "/ui/notifications?status=FAILED", "/ui/notifications?ack_status=PENDING",
        "/ui/notifications?source=db&order=asc", f"/ui/notifications?since={hour_ago}",
        "/ui/dlq", "/ui/dlq?sort=failed", "/ui/dlq?sort=-failed&source=db", "/ui/dlq?sort=failed&reason=timed",
        # The same filtered pages at a size both tables fill: at 10 k the DLQ holds 100 dead
        # letters, 25 from source db and 33 timed out, so the console's page of 100 returns 25
        # or 33 items there and 100 at the larger size (a fuller answer, as the charts' windows
        # were); with limit=25 each answer is 25 items at both sizes.
        "/ui/dlq?sort=-failed&source=db&limit=25", "/ui/dlq?sort=failed&reason=timed&limit=25",
        "/ui/dlq/groups?by=reason", "/ui/dlq/groups?by=source",
        # the people audit: the console's page and each filter shape (one index range each)
        "/ui/audit?limit=50", "/ui/audit?actor=oncall-7&limit=50", "/ui/audit?action=REPLAY_REQUESTED&limit=50",
        "/ui/audit?object_type=channel&limit=50", f"/ui/audit?object_type=notification&object_id={dead}&limit=50",
        "/ui/audit?bulk_action_id=bench-bulk-audit&limit=50", f"/ui/audit?since={hour_ago}&limit=50",
        f"/ui/audit?actor=oncall-7&since={hour_ago}&limit=50", "/api/v1/audit",
        "/ui/channels", "/ui/policies", "/ui/bulk-actions/preview?action=replay",
        "/ui/series?window=1h", "/ui/series?window=24h", "/ui/series?window=7d",
        f"/ui/dlq?failed_since={hour_ago}&failed_until={hour_ago + 60}&sort=failed",
        "/ui/bulk-actions/preview?action=ack&source=bench", f"/ui/bulk-actions/{bulk}", "/ui/me",
        "/api/v1/notifications", "/api/v1/notifications?status=FAILED", "/api/v1/notifications?source=db&order=asc",
        f"/api/v1/notifications?since={hour_ago}", "/api/v1/dlq", "/api/v1/channels", "/api/v1/policies",
        "/api/v1/policies/revisions",
        f"/ui/notifications/{dead}", f"/api/v1/notifications/{dead}", f"/api/v1/notifications/{dead}/timeline",
    ]
    return [(p.replace(dead, "{id}").replace(bulk, "{bulk}").replace(str(hour_ago + 60), "<hour ago + 60>")
             .replace(str(hour_ago), "<hour ago>"), p) for p in paths]


def sqlite_reference(tmp: str, seconds: float) -> float:
    """Accept-shaped transactions/s in Python's sqlite3 with the project's pragmas (WAL,
    synchronous=NORMAL, BEGIN IMMEDIATE): key lookup, policy read, notification, dedup upsert,
    event and audit INSERTs, one commit."""
    conn = sqlite3.connect(f"{tmp}/ref.sqlite3", isolation_level=None)
    conn.executescript("""
        PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
        CREATE TABLE policy (id INTEGER PRIMARY KEY, version INT, config TEXT);
        INSERT INTO policy VALUES (1, 1, '{"max_attempts":8}');
        CREATE TABLE notification (id INTEGER PRIMARY KEY, idem_key TEXT UNIQUE, status TEXT, payload TEXT,
                                   next_attempt REAL);
        CREATE INDEX notification_due ON notification (next_attempt) WHERE status = 'PENDING';
        CREATE TABLE dedup_window (dedup_key TEXT PRIMARY KEY, first_id INT, hits INT);
        CREATE TABLE notification_event (id INTEGER PRIMARY KEY, notification_id INT, kind TEXT, detail TEXT);
        CREATE TABLE audit_log (id INTEGER PRIMARY KEY, notification_id INT, actor TEXT, action TEXT);
    """)
    payload = '{"title":"storm","body":"' + "Your order has shipped. " * 40 + '"}'
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        key = uuid.uuid4().hex
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("SELECT id, status FROM notification WHERE idem_key = ?", (key,)).fetchall()
        conn.execute("SELECT version, config FROM policy WHERE id = 1").fetchall()
        nid = conn.execute("INSERT INTO notification (idem_key, status, payload, next_attempt) VALUES (?, 'PENDING', ?, ?)",
                           (key, payload, time.time())).lastrowid
        conn.execute("INSERT INTO dedup_window VALUES (?, ?, 1) ON CONFLICT (dedup_key) DO UPDATE SET hits = hits + 1",
                     (f"dk:{n % 1000}", nid))
        conn.execute("INSERT INTO notification_event (notification_id, kind, detail) VALUES (?, 'ACCEPTED', '{}')", (nid,))
        conn.execute("INSERT INTO audit_log (notification_id, actor, action) VALUES (?, 'bench', 'ACCEPT')", (nid,))
        conn.execute("COMMIT")
        n += 1
    return n / (time.perf_counter() - start)


def write_results(args, started):
    append_results(started, [
        f"# UNS bench, {started:%Y-%m-%d %H:%M} UTC", "",
        f"`bench/run.py --only {','.join(args.only)} --seconds {args.seconds} --growth-rows {args.growth_rows}`; "
        f"{os.cpu_count()} CPUs; load = 1-minute load average when the figure was taken.", ""],
        "| work | UNS | pgbench / reference, same server, same run | ratio | load |", ROWS)


def main():
    import argparse

    env_url = os.environ.get("DATABASE_URL", "")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(PHASES), help=f"comma-separated phases of {','.join(PHASES)}")
    p.add_argument("--seconds", type=int, default=10, help="length of each measurement, UNS and pgbench (default 10)")
    p.add_argument("--server", choices=("uvicorn", "daphne"), default="uvicorn",
                   help="the scaled mode's web server (default uvicorn, httptools + websockets-sansio, as the "
                        "README's scaled recipe runs it; daphne: the alternative)")
    p.add_argument("--web-processes", type=int, default=2,
                   help="web processes for the accept phase's second set of rows (default 2 = the CPUs of "
                        "this machine; daphne: one port each, producers spread over them; uvicorn: --workers "
                        "N on one port; 1 skips)")
    p.add_argument("--max-requests", type=int, default=20000, help="cap on requests per HTTP measurement")
    p.add_argument("--dispatch-count", type=int, default=2000, help="backlog the dispatch phase drains (default 2000)")
    p.add_argument("--profile-count", type=int, default=300, help="notifications profiled in-process (default 300)")
    p.add_argument("--ack-count", type=int, default=1500, help="acknowledgeable notifications for the ACK phase")
    p.add_argument("--growth-rows", type=int, default=100_000, help="rows for the growth comparison (default 100k)")
    p.add_argument("--growth-samples", type=int, default=20, help="GETs per endpoint and size (median)")
    p.add_argument("--pg-url", default=env_url if env_url.startswith("postgres") else DEFAULT_PG_URL)
    p.add_argument("--ref-dir", type=Path, default=ROOT.parent / "shared" / "perf" / "pgbench")
    args = p.parse_args()
    args.only = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = set(args.only) - set(PHASES)
    if unknown:
        p.error(f"unknown phase(s) {sorted(unknown)}; choose from {','.join(PHASES)}")
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"UNS bench: phases {args.only}, {args.seconds} s per measurement, load {load1()}", flush=True)
    pg_phases = [x for x in args.only if x != "sqlite"]
    if pg_phases:
        with throwaway_database("postgres", args.pg_url):
            bench = Bench(args)
            try:
                bench.setup()
                for phase in pg_phases:
                    print(f"[{phase}]", flush=True)
                    getattr(bench, phase)()
            finally:
                bench.close()
    if "sqlite" in args.only:
        print("[sqlite]", flush=True)
        Bench(args).sqlite()
    write_results(args, started)


if __name__ == "__main__":
    main()
