"""The floor of the request path: server CPU per request and rate, rung by rung, from a bare ASGI
app to the real accept and ACK (issue 20's "lean request path").

    .venv/bin/python bench/floor.py [--seconds 5] [--clients 16] [--port 18700] [--rounds 1]

One uvicorn process, started as ``bench/run.py`` starts it (the README's scaled recipe: httptools,
websockets-sansio, no per-message deflate, one worker, ``UNS_EMBEDDED_WORKER=false``) on a fresh
PostgreSQL database, serving ``floor_site.asgi`` (``bench/floor_site/``: the project's ASGI stack,
settings and URLs plus test-only rungs that never ship in the project's URLs). Each rung is loaded
by ``--clients`` concurrent clients (HTTP: ``run.http_load``, the same POST body as the accept
phase; WebSocket: ``run._ws_acks``, the same ACK frame) for ``--seconds``, after a one-second
warm-up; the server's CPU (``run.tree_cpu``: ``/proc``, the process tree) is divided by the
requests answered. HTTP rungs:

- ``bare ASGI``: a bare ASGI callable answering 202 before any of the project runs;
- ``Django view``: a function view answering 202 through the project's ASGI handler
  (``notifications.http_threads``) and its whole middleware chain;
- ``DRF, no auth``: an empty ``APIView`` with the project's parser and renderer settings;
- ``DRF + auth``: the same with the project's authentication classes and ``HasCapability``;
- ``POST /api/v1/notifications``: the real accept (a webhook channel, ``require_ack``; no worker
  runs, so nothing is delivered), with and without the live push (``UNS_EVENT_PUBLISHER=""``,
  a second server).

WebSocket rungs: a bare ASGI echo; a Channels consumer echo behind the project's WebSocket stack;
``RespondConsumer`` with its work replaced by the credentials re-check (frame validation, one
``ws_auth.database_call``, the token and capability read); the real ACK over ``/ws/respond/``
(rows made ACK-able in SQL, ``run.MAKE_ROWS_SQL``). The real accept and ACK are also measured
from one client (latency). ``--rounds`` repeats the ladder (rungs alternate, so a burst of load
on the shared machine falls on all of them). The table is printed and appended to
``bench/results/<UTC date>.md``.
"""
import argparse
import asyncio
import datetime
import os
import sys
import uuid

from _common import DEFAULT_PG_URL, ROOT, append_results, throwaway_database
from run import (MAKE_ROWS_SQL, PY, Proc, _ws_acks, accept_batches, accept_body, child_env, http_load, load1, ms,
                 tree_cpu, wait_http)

HTTP_RUNGS = [
    ("HTTP (a) bare ASGI app, 202", "/floor/bare"),
    ("HTTP (b) Django function view, project middleware", "/floor/django"),
    ("HTTP (c) empty DRF APIView, no auth", "/floor/drf"),
    ("HTTP (d) empty DRF APIView + token auth + HasCapability", "/floor/drf-auth"),
    ("HTTP (e) POST /api/v1/notifications", "/api/v1/notifications"),
]
WS_RUNGS = [
    ("WS (a) bare ASGI echo", "/floor/ws-bare/"),
    ("WS (b) Channels consumer echo, project WS stack", "/floor/ws-echo/"),
    ("WS (c) RespondConsumer, re-check only (1 database_call)", "/floor/ws-recheck/"),
    ("WS (d) ACK over /ws/respond/", "/ws/respond/"),
]


def server_cmd(port: int) -> list[str]:
    """uvicorn as ``run.Bench.server_cmd`` runs it, on ``floor_site.asgi`` (``--app-dir bench``)."""
    return [PY, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port), "--ws", "websockets-sansio",
            "--ws-per-message-deflate", "false", "--http", "httptools", "--log-level", "warning", "--no-access-log",
            "--workers", "1", "--app-dir", str(ROOT / "bench"), "floor_site.asgi:application"]


class Floor:
    def __init__(self, args):
        self.args = args
        self.rows: list[tuple[str, str, str, str, str, str, str]] = []
        self.servers: list[Proc] = []

    def setup(self):
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from knox.models import AuthToken

        from notifications.models import Channel

        # No worker runs: the channel is never called.
        Channel.objects.create(name="bench-hook", kind="webhook", config={"url": "http://127.0.0.1:9/", "timeout": 10})
        user = get_user_model().objects.create(username="bench")
        user.groups.add(*Group.objects.all())
        _, self.token = AuthToken.objects.create(user=user, expiry=None)
        self.env = child_env(DATABASE_URL=os.environ["DATABASE_URL"], UNS_EMBEDDED_WORKER="false",
                             DJANGO_SETTINGS_MODULE="floor_site.settings",
                             REDIS_URL=self.args.redis_url, UNS_CHANNEL_PREFIX=f"uns-floor-{uuid.uuid4().hex[:8]}")

    def start(self, port: int, **env) -> Proc:
        proc = Proc(server_cmd(port), {**self.env, **env}, f"floor-{port}")
        self.servers.append(proc)
        wait_http(f"http://127.0.0.1:{port}/healthz")
        return proc

    def close(self):
        for proc in self.servers:
            proc.stop()

    def record(self, rung, clients, answered, ok, lat, elapsed, cpu, extra=""):
        per = f"{cpu / answered * 1000:.2f}" if answered else "n/a"
        self.rows.append((rung, str(clients), f"{ok / elapsed:.0f}", f"{ms(lat, 50):.2f}", f"{ms(lat, 99):.1f}", per,
                          extra, load1()))
        print(f"  {rung}, {clients} client(s): {ok / elapsed:.0f}/s, p50 {ms(lat, 50):.2f} ms, p99 {ms(lat, 99):.1f} "
              f"ms, server CPU {per} ms/req {extra} (load {load1()})", flush=True)

    def http(self, server, port, rung, path, clients, seconds):
        url = f"http://127.0.0.1:{port}{path}"
        http_load(url, self.token, clients, 1, 10**6, accept_body())  # warm-up
        real = path == "/api/v1/notifications"
        b0 = accept_batches(url.replace(path, "/api/v1/notifications")) if real else None
        cpu0 = tree_cpu(server.p.pid)
        codes, lat, elapsed = http_load(url, self.token, clients, seconds, 10**6, accept_body())
        cpu = tree_cpu(server.p.pid) - cpu0
        extra = ""
        if real:
            (s1, c1), (s0, c0) = accept_batches(url), b0
            extra = f"{(s1 - s0) / max(1.0, c1 - c0):.1f} per commit"
        others = {k: v for k, v in codes.items() if k != 202}
        if others:
            extra += f" other {others}"
        self.record(rung, clients, sum(codes.values()), codes.get(202, 0), lat, elapsed, cpu, extra)

    def ws(self, server, port, rung, path, clients, seconds):
        url = f"ws://127.0.0.1:{port}{path}"
        real = path == "/ws/respond/"
        count = (2000 if real else 20000) * seconds + 1000
        ids = self.ackable(count) if real else [str(uuid.uuid4()) for _ in range(count)]
        warm = self.ackable(300) if real else [str(uuid.uuid4()) for _ in range(300)]
        asyncio.run(_ws_acks(url, self.token, clients, warm, 1))
        base = f"http://127.0.0.1:{port}/api/v1/notifications"
        b0 = accept_batches(base, "ack") if real else None
        cpu0 = tree_cpu(server.p.pid)
        results, lat, elapsed = asyncio.run(_ws_acks(url, self.token, clients, ids, seconds))
        cpu = tree_cpu(server.p.pid) - cpu0
        extra = ""
        if real:
            (s1, c1), (s0, c0) = accept_batches(base, "ack"), b0
            extra = f"{(s1 - s0) / max(1.0, c1 - c0):.1f} per commit"
        others = {k: v for k, v in results.items() if k != "ok"}
        if others:
            extra += f" other {others}"
        if not ids:
            extra += " (ran out of rows)"
        self.record(rung, clients, sum(results.values()), results.get("ok", 0), lat, elapsed, cpu, extra)

    def ackable(self, n: int) -> list[str]:
        """``n`` fresh DELIVERED rows awaiting an ACK (copies of an accepted row, in SQL)."""
        import time

        from django.db import connection

        with connection.cursor() as cur:
            cur.execute(MAKE_ROWS_SQL, {"now": time.time(), "kind": "ack", "n": n})
            return [r[0] for r in cur.fetchall()]

    def run(self):
        a = self.args
        port = a.port
        server = self.start(port, **dict(kv.split("=", 1) for kv in a.server_env))
        for r in range(a.rounds):
            print(f"[round {r + 1}: HTTP, {a.clients} clients]", flush=True)
            for rung, path in HTTP_RUNGS:
                if self.wanted(rung):
                    self.http(server, port, rung, path, a.clients, a.seconds)
            if self.wanted(HTTP_RUNGS[-1][0]) and not a.no_single:
                self.http(server, port, HTTP_RUNGS[-1][0], HTTP_RUNGS[-1][1], 1, a.seconds)
            print(f"[round {r + 1}: WebSocket, {a.clients} sockets]", flush=True)
            for rung, path in WS_RUNGS:
                if self.wanted(rung):
                    self.ws(server, port, rung, path, a.clients, a.seconds)
            if self.wanted(WS_RUNGS[-1][0]) and not a.no_single:
                self.ws(server, port, WS_RUNGS[-1][0], WS_RUNGS[-1][1], 1, a.seconds)
        if not a.no_push_off:
            quiet = self.start(port + 1, UNS_EVENT_PUBLISHER="")
            print("[live push off]", flush=True)
            for r in range(a.rounds):
                self.http(quiet, port + 1, "HTTP (e') POST /api/v1/notifications, live push off",
                          "/api/v1/notifications", a.clients, a.seconds)
                self.ws(quiet, port + 1, "WS (d') ACK over /ws/respond/, live push off", "/ws/respond/",
                        a.clients, a.seconds)

    def wanted(self, rung: str) -> bool:
        """Whether ``--rungs`` selects ``rung`` (its transport and letter, e.g. ``http-e``)."""
        if not self.args.rungs:
            return True
        transport, letter = rung.split()[0].lower(), rung.split()[1].strip("()")
        return f"{transport}-{letter}" in self.args.rungs.split(",")

    def write(self, started):
        lines = [f"# UNS floor ladder, {started:%Y-%m-%d %H:%M} UTC", "",
                 f"`bench/floor.py --seconds {self.args.seconds} --clients {self.args.clients} "
                 f"--rounds {self.args.rounds}" + (f" --rungs {self.args.rungs}" if self.args.rungs else "")
                 + "".join(f" --server-env {kv}" for kv in self.args.server_env)
                 + f"`; uvicorn x1 (httptools, websockets-sansio), PostgreSQL; {os.cpu_count()} CPUs; "
                 "load = 1-minute load average after the figure.", ""]
        append_results(started, lines, "| rung | clients | answered/s | p50 ms | p99 ms | server CPU ms/req | note | load |",
                       self.rows)


def main():
    env_url = os.environ.get("DATABASE_URL", "")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=int, default=5, help="length of each rung's measurement (default 5)")
    p.add_argument("--clients", type=int, default=16, help="concurrent HTTP clients / sockets (default 16)")
    p.add_argument("--rounds", type=int, default=1, help="times the ladder runs (default 1)")
    p.add_argument("--port", type=int, default=18700, help="the server's port (the live-push-off one: +1)")
    p.add_argument("--no-push-off", action="store_true", help="skip the rungs with the live push off")
    p.add_argument("--no-single", action="store_true", help="skip the real accept's and ACK's 1-client rows")
    p.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                   help="an environment variable for the server (repeatable), e.g. UNS_DB_POOL_CHECK=false")
    p.add_argument("--rungs", default="", help="comma-separated rungs to run, e.g. http-b,http-e,ws-d (default all)")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    p.add_argument("--pg-url", default=env_url if env_url.startswith("postgres") else DEFAULT_PG_URL)
    args = p.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"UNS floor: {args.clients} clients, {args.seconds} s per rung, load {load1()}", flush=True)
    with throwaway_database("postgres", args.pg_url):
        floor = Floor(args)
        try:
            floor.setup()
            floor.run()
        finally:
            floor.close()
    floor.write(started)


if __name__ == "__main__":
    sys.exit(main())
