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

Not a test; figures depend on the machine's load (printed).
"""
import cProfile
import io
import pstats
import re
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


def main():
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--cprofile", type=int, default=25, help="functions to list (0: no cProfile)")
    parser.add_argument("--show-sql", action="store_true")
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
        if args.cprofile:
            prof = cProfile.Profile()
            prof.enable()
            for i in range(args.count):
                post({"source": "b", "title": f"p{i}", "channels": ["bench-hook"]}, 202)
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.cprofile)
            print(out.getvalue())
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.cprofile)
            print(out.getvalue())


if __name__ == "__main__":
    main()
