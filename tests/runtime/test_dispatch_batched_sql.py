"""The dispatch's batched statements on PostgreSQL (one JSON document parameter per batch:
``claim.document_values`` for the claim, lease check, settle and release row lists, and
``rows.insert``'s document form for the events and audit rows) write exactly what the per-value
VALUES lists and a per-row settle write, and keep every fence: a row of the batch whose lease
was taken is not settled. On SQLite the same tests run the VALUES path only."""
import importlib
import math

import pytest
from django.db import connection

from notifications.adapters.base import DeliveryResult
from notifications.models import Event, Notification, NotificationAuditRecord
from notifications.runtime import rows, timeline
from notifications.runtime.dispatch import window
from notifications.runtime.dispatch.claim import sql_values
from rthelpers import kinds, request, row

pytestmark = pytest.mark.django_db
claim_mod = importlib.import_module("notifications.runtime.dispatch.claim")  # the package exports claim()

OUTCOMES = {  # by title: what the receiver answers
    "ok": DeliveryResult(True, message_id="m-1", metadata={"status_code": 200, "host": "h:1"}),
    "busy": DeliveryResult(False, retryable=True, error="HTTP 503 from h:1", retry_after=12.5,
                           metadata={"status_code": 503}),
    "gone": DeliveryResult(False, retryable=False, error="HTTP 410 from h:1: \"quoted\" \\ é"),
    "stolen": DeliveryResult(True, message_id="m-2"),
    "dedup": DeliveryResult(True, message_id="m-3"),
}


def _per_title(notification, target, context):
    return OUTCOMES[notification["title"].split(" ")[0]]


def _no_documents(monkeypatch):
    """The per-value VALUES lists and multi-row INSERTs (the forms before the JSON documents)."""
    monkeypatch.setattr(claim_mod, "document_values", lambda rows_, casts: None)
    monkeypatch.setattr(rows, "_insert_document", lambda connection_, model, objs: False)


def _run(rt, webhook, monkeypatch, tag: str, per_row: bool = False) -> dict[str, str]:
    """One pass over five rows (delivered, retried, dead, fenced out, a dedup leader with a
    follower), settled in one batch (or, ``per_row``, each claim alone); returns title -> id."""
    ids = {}
    for title in ("ok", "busy", "gone", "stolen", "dedup"):
        extra = {"dedup_key": f"dk-{tag}"} if title == "dedup" else {}
        ids[title] = rt.accept("alice", request(title=f"{title} {tag}", require_ack=True, **extra)).notification.id
    ids["follower"] = rt.accept("alice", request(title=f"dedup {tag} again", require_ack=True,
                                                 dedup_key=f"dk-{tag}")).notification.id
    webhook.script.extend([_per_title] * 5)
    real = window.settle_batch

    def settle(runtime, claims):
        # another worker took this row's lease after its attempt: the settle must not touch it
        Notification.objects.filter(id=ids["stolen"]).update(lease_token="someone-else")
        if per_row:
            return [r for c in claims for r in real(runtime, [c])]
        return real(runtime, claims)

    monkeypatch.setattr(window, "settle_batch", settle)
    reports = {r.id: r.status for r in rt.dispatch()}
    monkeypatch.setattr(window, "settle_batch", real)
    assert reports == {ids["ok"]: "DELIVERED", ids["busy"]: "PENDING", ids["gone"]: "FAILED",
                       ids["stolen"]: "LEASE_LOST", ids["dedup"]: "DELIVERED"}
    return ids


def _written(ids: dict[str, str]) -> dict:
    """Everything the pass wrote for ``ids``, with ids, tokens and dedup keys named by title."""
    names = {v: k for k, v in ids.items()}
    tokens = {}

    def norm(value):
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list):
            return [norm(v) for v in value]
        if isinstance(value, str):
            if value in names:
                return names[value]
            if value.startswith("dk-"):
                return "dk"
        return value

    def events(nid):
        out = []
        for e in Event.objects.filter(notification_id=nid).order_by("at", "kind", "id"):
            payload = dict(e.payload)
            if "lease_token" in payload:
                payload["lease_token"] = tokens.setdefault(payload["lease_token"], f"token-{len(tokens)}")
            out.append((e.kind, e.at, norm(payload), e.callback_pending, e.callback_until, e.callback_attempts,
                        e.callback_token, e.callback_error))
        return out

    skip = {"id", "notification_id"}
    audits = {names[a.notification_id]: {f.attname: getattr(a, f.attname)
                                         for f in NotificationAuditRecord._meta.concrete_fields if f.attname not in skip}
              for a in NotificationAuditRecord.objects.filter(notification_id__in=list(ids.values()))}
    state = {}
    for n in Notification.objects.filter(id__in=list(ids.values())):
        state[names[n.id]] = (n.status, n.ack_status, n.dead_letter, n.delivered_at, n.deadline, n.next_attempt,
                              n.failed_at, n.lease_until, n.lease_token is None, norm(n.outcome), n.attempts)
    return {"events": {names[nid]: events(nid) for nid in ids.values()}, "audits": audits, "state": state}


def test_a_fenced_out_row_in_the_batch_is_not_settled(rt, webhook, channel, monkeypatch):
    ids = _run(rt, webhook, monkeypatch, "a")
    stolen = row(ids["stolen"])
    assert (stolen.status, stolen.lease_token, stolen.ack_status) == ("PENDING", "someone-else", None)
    assert kinds(ids["stolen"])[-2:] == ["CHANNEL_ATTEMPT_RESULT", "LEASE_LOST"]  # its observation is kept
    assert not NotificationAuditRecord.objects.filter(notification_id=ids["stolen"]).exists()
    assert row(ids["ok"]).status == "DELIVERED" and row(ids["gone"]).dead_letter


@pytest.mark.parametrize("other", ["values", "per_row"])
def test_the_batch_writes_what_the_values_lists_and_a_per_row_settle_write(rt, clock, webhook, channel,
                                                                            monkeypatch, other):
    batched = _written(_run(rt, webhook, monkeypatch, "batched"))
    if other == "values":
        _no_documents(monkeypatch)
    reference = _written(_run(rt, webhook, monkeypatch, other, per_row=other == "per_row"))
    assert batched == reference
    assert batched["events"]["follower"][-1][0] == timeline.DEDUP_SATISFIED  # the follower's settle is in it
    assert set(batched["audits"]) == {"ok", "busy", "gone", "dedup"}


CASTS = ("text", "text", "jsonb", "boolean", "double precision", "integer")
AWKWARD = [
    ("a", "it's \"quoted\" \\ é \u2603 \n\t", '{"k": [1, 2.5, null], "s": "x"}', True, 1733229123.4567891, 7),
    ("b", None, None, False, 0.1, None),
    ("c", "", '"just a string"', None, 1e-300, -2**31),
    ("d", "x" * 300, "[]", True, 123456789012.25, 0),
]


def _select(source):
    sql, params = source
    with connection.cursor() as cur:
        cur.execute(f"SELECT * FROM {sql} AS v ORDER BY v.column1", params)  # nosec B608  # test
        return cur.fetchall()


def test_the_row_document_reads_back_the_values_list_exactly(monkeypatch):
    document = _select(sql_values(AWKWARD, CASTS))
    monkeypatch.setattr(claim_mod, "document_values", lambda rows_, casts: None)
    values = _select(sql_values(AWKWARD, CASTS))
    assert document == values and len(values) == len(AWKWARD)
    assert [r[4] for r in document] == [r[4] for r in AWKWARD]  # floats bit for bit


def test_rows_json_cannot_hold_take_the_values_list():
    assert claim_mod.document_values([("a", math.inf)], ("text", "double precision")) is None
    assert claim_mod.document_values([("a", 1.5)], ("text", "double precision")) is not None
    sql, params = sql_values([("a", math.inf), ("b", math.nan)], ("text", "double precision"))
    assert "VALUES" in sql and _select((sql, params))[0][1] == math.inf


def _events(tag):
    return [timeline.event(f"n-{tag}-{i}", timeline.CHANNEL_ATTEMPT_RESULT, {
        "i": i, "error": "it's \"quoted\" \\ é \u2603", "metadata": {"x": None, "f": 0.1 * i, "big": 2**60},
        "list": [1, "two", None], "empty": {}}, 1733229123.4567891 + i) for i in range(5)]


def _stored(objs):
    found = {e.id: e for e in Event.objects.filter(id__in=[e.id for e in objs])}
    return [{f.attname: getattr(found[e.id], f.attname) for f in Event._meta.concrete_fields
             if f.attname not in ("id", "notification_id")} for e in objs]


def test_the_insert_document_stores_what_one_row_inserts_store():
    batch = _events("doc")
    batch[1].callback_token, batch[1].callback_error, batch[1].callback_pending = "tok", "why \"not\"", True
    rows.insert(Event, batch)  # several rows: one JSON document on PostgreSQL
    alone = _events("one")
    alone[1].callback_token, alone[1].callback_error, alone[1].callback_pending = "tok", "why \"not\"", True
    for e in alone:
        rows.insert(Event, [e])  # one row: the VALUES form
    assert _stored(batch) == _stored(alone)
    assert [e._state.adding for e in batch] == [False] * 5


def test_an_insert_json_cannot_hold_takes_the_values_form():
    batch = _events("inf")
    batch[0].callback_until = math.inf  # a float JSON has no literal for
    rows.insert(Event, batch)
    assert Event.objects.get(id=batch[0].id).callback_until == math.inf
    assert Event.objects.filter(id__in=[e.id for e in batch]).count() == 5


def test_timeline_event_builds_the_model_in_its_column_order():
    """``timeline.event`` passes the columns positionally (Django's fast path)."""
    assert tuple(f.attname for f in Event._meta.concrete_fields) == timeline.EVENT_COLUMNS
    e = timeline.event("n-1", timeline.ACKED, {"actor": "a"}, 12.5)
    assert (e.notification_id, e.kind, e.at, e.payload, e.callback_pending, e.callback_until, e.callback_token,
            e.callback_attempts, e.callback_error) == ("n-1", "ACKED", 12.5, {"actor": "a"}, True, 12.5, None, 0, None)


def test_values_of_other_types_are_stored_as_their_fields_store_them():
    """A value whose type a field converts (an int in a FloatField, a str subclass, a bool in an
    IntegerField, a tuple in a JSONField) is stored as ``get_db_prep_save`` stores it."""
    from django.utils.safestring import SafeString

    def odd(tag):
        batch = _events(tag)
        batch[0].at, batch[0].kind, batch[0].callback_attempts = 7, SafeString("KIND"), True
        batch[1].payload = ("a", 1)
        return batch

    batch, alone = odd("odd-doc"), odd("odd-one")
    rows.insert(Event, batch)
    for e in alone:
        rows.insert(Event, [e])
    assert _stored(batch) == _stored(alone)
    stored = Event.objects.get(id=batch[0].id)
    assert (stored.at, stored.kind, stored.callback_attempts) == (7.0, "KIND", 1)
