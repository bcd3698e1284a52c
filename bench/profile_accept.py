"""Profile one HTTP accept (``POST /api/v1/notifications``): statements, commits and Python CPU.

    .venv/bin/python bench/profile_accept.py [--database postgres|sqlite] [--count 300] [--cprofile 25]

Against a throwaway migrated database (``_common.throwaway_database``), through the DRF test
client (the whole Django stack: middleware, knox authentication, permissions, the view and the
runtime; no ASGI server):

- statements per accept, by kind, counted with ``connection.execute_wrapper`` (one request of each
  shape: a new leader with a named channel, a new leader on the policy's default channels, an
  idempotent repeat, a dedup follower);
- Python CPU per request (``time.process_time``) over ``--count`` new leaders, and the
  ``--cprofile`` functions with the largest cumulative time.

With ``--daphne N``: N sequential requests to a real server on the same database (``--server``
daphne or uvicorn), statements and pool checkouts counted inside the server, server CPU from
``/proc``.

Not a test; figures depend on the machine's load (printed).

Figures, 2026-12-01, PostgreSQL 15 (synchronous_commit on), shared 2-core machine at load 6-8,
before (4dd7403^) and after the accept round-trip work, run back to back:

=====================================  ===============  ===============
per ``POST /api/v1/notifications``      before           after
=====================================  ===============  ===============
statements, new leader (named channel)  8                5 (+ BEGIN/COMMIT, + 1 pool check)
statements, new leader (policy default) 7                5
statements, idempotent repeat           3                3
statements, dedup leader / follower     10 / 10          6 / 7
CPU, DRF test client (whole stack)      8.1 ms           5.6 ms
server CPU, daphne, 1 producer          12.0 ms          10.2 ms
wall, daphne, 1 producer                22.8 ms          20.8 ms
=====================================  ===============  ===============

Of the 5 statements, 2 are authentication (token + user, permissions); under cProfile with a CPU
timer the knox authentication and capability lookup (ORM query construction of the permission
UNION) take more CPU than the accept itself. uvicorn (httptools, uvloop) measured no cheaper than
daphne per request then (9.4 vs 8.9 ms server CPU, same run); Django's ASGI handler (a thread hop
per request) adds ~3.5 ms over the test client.

2026-12-02 05:31 UTC, load 2-3, at 2a5a169 (5 statements): daphne 3.87 ms server CPU and 8.10 ms
wall per request, uvicorn (httptools, no uvloop) 3.25 ms and 5.83 ms (x0.84 CPU), test client
2.35 ms. Since then the token statement also reads the capabilities (4 statements per new leader).

2026-12-02 (load 10-12, back to back against main): with the token and capability statements
written once (``access``) and the event INSERT through ``rows.insert``, 8.93 -> 5.59 ms CPU in the
test client and 13.03 -> 9.00 ms server CPU in daphne, same 5 statements (bench/README.md).
"""
import cProfile
import io
import os
import pstats
import re
import sys
import tempfile
import time
import uuid
from collections import Counter

from _common import base_parser, environment, loadavg, throwaway_database


class Recorder:
    def __init__(self):
        self.sql = []

    def __call__(self, execute, sql, params, many, context):
        self.sql.append(sql)
        return execute(sql, params, many, context)

    def summary(self) -> str:
        kinds = Counter(_kind(s) for s in self.sql)
        return f"{len(self.sql)} statements: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common())


def _kind(sql: str) -> str:
    sql = sql.strip()
    word = sql.split(None, 1)[0].upper()
    if "FROM notification_policy_revisions r" in sql:
        return "SELECT revision lock+snapshot(+key, channels)"
    table = re.search(r'(?:FROM|INTO|UPDATE)\s+"?([a-z_]+)', sql, re.I)
    return f"{word} {table.group(1)}" if table and word not in ("SAVEPOINT", "RELEASE") else word


# Run inside the daphne process: count statements (execute wrapper on every connection) and pool
# checkouts (connection_created) into a small file, rewritten in place.
_COUNTING_DAPHNE = """
import os, sys
import django
django.setup()
from django.db.backends.signals import connection_created
fd = os.open(os.environ["UNS_PROFILE_COUNTS"], os.O_RDWR | os.O_CREAT, 0o600)
counts = [0, 0]
def save():
    os.pwrite(fd, f"{counts[0]} {counts[1]}          ".encode(), 0)
def wrapper(execute, sql, params, many, context):
    counts[0] += 1
    save()
    return execute(sql, params, many, context)
def created(sender, connection, **kw):
    counts[1] += 1
    save()
    if wrapper not in connection.execute_wrappers:
        connection.execute_wrappers.append(wrapper)
connection_created.connect(created)
if os.environ.get("UNS_PROFILE_SERVER") == "uvicorn":
    import uvicorn
    sys.argv = ["uvicorn"] + sys.argv[1:]
    uvicorn.main()
else:
    from daphne.cli import CommandLineInterface
    sys.argv = ["daphne"] + sys.argv[1:]
    CommandLineInterface.entrypoint()
"""


def _cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _daphne(args, token, url):
    import httpx

    from run import Proc, child_env, free_port, wait_http

    counts_file = tempfile.mktemp(prefix="uns-profile-counts-")
    for counting in (True, False):
        port = free_port()
        env = child_env(DATABASE_URL=os.environ["DATABASE_URL"], UNS_EMBEDDED_WORKER="false",
                        UNS_PROFILE_COUNTS=counts_file, UNS_PROFILE_SERVER=args.server)
        cmd = ([sys.executable, "-c", _COUNTING_DAPHNE] if counting else [sys.executable, "-m", args.server])
        if args.server == "uvicorn":
            cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--lifespan", "off"]
        else:
            cmd += ["-b", "127.0.0.1", "-p", str(port)]
        server = Proc(cmd + ["uns_project.asgi:application"], env, f"profile-{args.server}")
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz")
            with httpx.Client(base_url=f"http://127.0.0.1:{port}",
                              headers={"Authorization": f"Bearer {token}"}) as client:
                def send(n):
                    for _ in range(n):
                        r = client.post(url, json={"source": "d", "title": "t", "channels": ["bench-hook"],
                                                   "idempotency_key": uuid.uuid4().hex})
                        assert r.status_code == 202, r.text
                send(20)  # warm
                before = open(counts_file).read().split() if counting else None
                cpu0, wall0 = _cpu_seconds(server.p.pid), time.perf_counter()
                send(args.daphne)
                cpu, wall = _cpu_seconds(server.p.pid) - cpu0, time.perf_counter() - wall0
            if counting:
                after = open(counts_file).read().split()
                stmts, checkouts = (int(b) - int(a) for a, b in zip(before, after))
                print(f"  {args.server} (counting): {stmts / args.daphne:.2f} statements and {checkouts / args.daphne:.2f} "
                      f"pool checkouts per request (each checkout: one health-check round trip when "
                      f"UNS_DB_POOL_CHECK)")
            else:
                print(f"  {args.server}: {cpu / args.daphne * 1000:.2f} ms server CPU and {wall / args.daphne * 1000:.2f} ms "
                      f"wall per request, 1 producer, {args.daphne} requests; {loadavg()}")
        finally:
            server.stop()
    os.unlink(counts_file)


def main():
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--cprofile", type=int, default=25, help="functions to list (0: no cProfile)")
    parser.add_argument("--show-sql", action="store_true")
    parser.add_argument("--server", choices=("daphne", "uvicorn"), default="daphne",
                        help="the ASGI server for --daphne (uvicorn: httptools + uvloop when installed, no lifespan)")
    parser.add_argument("--dump", default="", help="with --cprofile: also write the raw stats to this file (pstats)")
    parser.add_argument("--callees", default="", help="with --cprofile: also list the callees of functions matching this regex")
    parser.add_argument("--daphne", type=int, default=0, metavar="N",
                        help="also send N sequential requests to a real daphne on the same database: statements "
                             "and pool checkouts per request (counted in the server), server CPU per request")
    args = parser.parse_args()
    with throwaway_database(args.database, args.pg_url, args.synchronous_commit):
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from django.db import connection
        from knox.models import AuthToken
        from rest_framework.test import APIClient

        from notifications.models import Channel

        settings.ALLOWED_HOSTS = ["*"]
        Channel.objects.create(name="bench-hook", kind="webhook", config={"url": "http://127.0.0.1:9/"})
        user = get_user_model().objects.create(username="bench")
        user.groups.add(*Group.objects.filter(name="producer"))
        _, token = AuthToken.objects.create(user=user, expiry=None)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        url = "/api/v1/notifications"
        print(f"accept profile: {environment()}")

        def post(body, expect):
            r = client.post(url, body, format="json")
            assert r.status_code == expect, (r.status_code, r.content)
            return r

        post({"source": "warm", "title": "w"}, 202)  # bootstrap the policy, warm imports
        shapes = [
            ("new leader, channel named", {"source": "b", "title": "t", "channels": ["bench-hook"],
                                           "idempotency_key": "idem-1"}, 202),
            ("idempotent repeat", {"source": "b", "title": "t", "channels": ["bench-hook"],
                                   "idempotency_key": "idem-1"}, 200),
            ("new leader, default channels", {"source": "b", "title": "t2"}, 202),
            ("dedup leader", {"source": "b", "title": "t3", "dedup_key": "dk"}, 202),
            ("dedup follower", {"source": "b", "title": "t4", "dedup_key": "dk"}, 202),
        ]
        for label, body, code in shapes:
            rec = Recorder()
            with connection.execute_wrapper(rec):
                post(body, code)
            print(f"  {label:<30} {rec.summary()}")
            if args.show_sql:
                for s in rec.sql:
                    print("      " + s[:200])

        bodies = [{"source": "b", "title": f"t{i}", "channels": ["bench-hook"], "idempotency_key": uuid.uuid4().hex}
                  for i in range(args.count)]
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for body in bodies:
            post(body, 202)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        print(f"  {args.count} new leaders: {cpu / args.count * 1000:.2f} ms CPU and "
              f"{wall / args.count * 1000:.2f} ms wall per request (test client, this process); {loadavg()}")
        if args.daphne:
            _daphne(args, token, url)
        if args.cprofile:
            prof = cProfile.Profile(time.process_time)  # CPU, not time spent waiting for the database
            prof.enable()
            for i in range(args.count):
                post({"source": "b", "title": f"p{i}", "channels": ["bench-hook"]}, 202)
            prof.disable()
            if args.dump:
                prof.dump_stats(args.dump)
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.cprofile)
            print(out.getvalue())
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.cprofile)
            print(out.getvalue())
            if args.callees:
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats("cumulative").print_callees(args.callees)
                print(out.getvalue())


if __name__ == "__main__":
    main()
