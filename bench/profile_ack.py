"""Profile one ACK over ``/ws/respond/``: statements, transactions and Python CPU per message.

    .venv/bin/python bench/profile_ack.py [--database postgres|sqlite] [--count 300] [--cprofile 30]

Against a throwaway migrated database (``_common.throwaway_database``): ``--count`` x 3
notifications with ``require_ack`` are accepted and delivered in-process (console channel), then

- one socket (channels' ``WebsocketCommunicator`` on the real ASGI application: the origin check,
  the session middleware, the consumer, its database thread) ACKs ``--count`` of them one at a
  time: statements per ACK (every connection's cursor, any thread) and the database transactions
  they make, and Python CPU per ACK (``time.process_time``: every thread of this process);
- under cProfile (CPU timer), what one socket message runs in its database thread (the
  consumer's ``_respond``: the credential re-check, ``Runtime.acknowledge``, the answer's body),
  called directly for another ``--count``, listing the ``--cprofile`` costliest functions.

Not a test; figures depend on the machine's load (printed).
"""
import asyncio
import cProfile
import io
import pstats
import threading
import time
from collections import Counter

from _common import base_parser, environment, loadavg, throwaway_database


class Statements:
    """Statements of every connection (``CursorWrapper._execute_with_wrappers``) while ``on``, each
    with the transaction it ran in (an outermost atomic block, or autocommit: its own)."""

    def __init__(self):
        self.on = False
        self.sql: list[str] = []
        self.transactions = 0
        self._blocks = set()
        self._lock = threading.Lock()

    def install(self):
        from django.db.backends import utils

        original = utils.CursorWrapper._execute_with_wrappers
        recorder = self

        def counting(cursor, sql, params, many, executor):
            if recorder.on and not str(sql).startswith("BEGIN"):
                db = cursor.db
                with recorder._lock:
                    recorder.sql.append(str(sql))
                    if not db.in_atomic_block:
                        recorder.transactions += 1
                    elif id(db.atomic_blocks[0]) not in recorder._blocks:
                        recorder._blocks.add(id(db.atomic_blocks[0]))
                        recorder.transactions += 1
            return original(cursor, sql, params, many, executor)

        utils.CursorWrapper._execute_with_wrappers = counting

    def kinds(self) -> str:
        import re

        def kind(sql):
            word = sql.split(None, 1)[0].upper()
            if "knox_authtoken" in sql:
                return f"{word} knox_authtoken (+ user{', capabilities' if 'auth_permission' in sql else ''})"
            table = re.search(r'(?:FROM|INTO|UPDATE)\s+"?([a-z_]+)', sql, re.I)
            return f"{word} {table.group(1)}" if table else word

        return ", ".join(f"{k} {n}" for k, n in Counter(kind(s) for s in self.sql).most_common())


def main():
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--cprofile", type=int, default=30, help="functions to list (0: no cProfile)")
    args = parser.parse_args()
    with throwaway_database(args.database, args.pg_url, args.synchronous_commit):
        from channels.testing import WebsocketCommunicator
        from django.apps import apps
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from knox.models import AuthToken

        from notifications import ws_auth
        from core.capabilities import RESPOND
        from notifications.consumers import RespondConsumer
        from notifications.runtime import Runtime
        from uns_project.asgi import application

        clock = [time.time()]
        rt = Runtime(clock=lambda: clock[0], callback=None)
        apps.get_app_config("notifications").process_runtime = rt
        user = get_user_model().objects.create(username="bench-responder")
        user.groups.add(*Group.objects.filter(name="responder"))
        _, token = AuthToken.objects.create(user=user, expiry=None)
        print(f"ACK profile: {environment()}")
        ids = []
        for i in range(args.count * 2 + 5):
            ids.append(rt.accept("bench", {"source": "b", "title": f"t{i}", "channels": ["console"],
                                           "require_ack": True}).notification.id)
        clock[0] += 1
        while rt.dispatch():
            pass
        stmts = Statements()
        stmts.install()

        async def over_socket(nids):
            comm = WebsocketCommunicator(application, "/ws/respond/",
                                         headers=[(b"authorization", f"Bearer {token}".encode())])
            connected, _ = await comm.connect(timeout=30)
            assert connected
            try:
                async def ack(nid):
                    await comm.send_json_to({"action": "ack", "request_id": nid, "notification_id": nid})
                    reply = await comm.receive_json_from(timeout=30)
                    assert reply["ok"], reply

                for nid in nids[:5]:  # warm
                    await ack(nid)
                stmts.on = True
                await ack(nids[5])
                stmts.on = False
                one = (len(stmts.sql), stmts.transactions, stmts.kinds())
                cpu0, wall0 = time.process_time(), time.perf_counter()
                for nid in nids[6:]:
                    await ack(nid)
                cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
                return one, cpu / len(nids[6:]), wall / len(nids[6:])
            finally:
                await comm.disconnect()

        (n, tx, kinds), cpu, wall = asyncio.run(over_socket(ids[:args.count + 6]))
        print(f"  one ACK over /ws/respond/: {n} statements in {tx} transaction(s): {kinds}")
        print(f"  {args.count - 6} ACKs, one socket: {cpu * 1000:.2f} ms CPU and {wall * 1000:.2f} ms wall per ACK "
              f"(this process, every thread); {loadavg()}")
        ws_auth.close_database_threads()
        if args.cprofile:
            consumer = RespondConsumer()
            consumer.scope = {"type": "websocket", "headers": [(b"authorization", f"Bearer {token}".encode())]}
            consumer.principal = ws_auth._authorize(consumer.scope, token, RESPOND)[0]
            rest = ids[args.count + 6:]
            prof = cProfile.Profile(time.process_time)
            prof.enable()
            for nid in rest:
                refusal, body = consumer._respond("ack", nid, {"metadata": None}, nid)
                assert refusal is None and body["ack_status"] == "ACKED"
            prof.disable()
            out = io.StringIO()
            stats = pstats.Stats(prof, stream=out)
            print(f"  cProfile of {len(rest)} x RespondConsumer._respond (the database thread's work):")
            stats.sort_stats("cumulative").print_stats(args.cprofile)
            stats.sort_stats("tottime").print_stats(args.cprofile // 2)
            print(out.getvalue())


if __name__ == "__main__":
    main()
