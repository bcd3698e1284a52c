"""One pagination rule for every list on /api/v1 and /ui (``notifications.pagination``), and one
``failed_at`` for a dead letter on /api/v1/dlq and /ui/dlq."""
from urllib.parse import parse_qsl

import pytest

from notifications.adapters.base import DeliveryResult
from notifications.models import Event, Notification, PeopleAuditRecord
from notifications.runtime import timeline

from .helpers import assert_problem, exhaust

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(api, clock, monkeypatch):
    """A client that may read every list (console and DLQ operator); /ui's ``now`` is the fake clock."""
    from console import views

    monkeypatch.setattr(views, "clock", clock)
    return api(groups=("console", "operator"), name="ops-reader")


@pytest.fixture
def world(api_rt, clock, webhook, channel):
    """Dead letters, deliveries awaiting ACK and ACKED ones, several accepted at the same instant
    (ties the keyset must break by id), a few seconds apart in groups. Returns one dead letter's id."""
    rt = api_rt
    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    for i in range(5):
        rt.accept("svc", {"source": "billing", "title": f"doomed {i}", "channels": ["ops-hook"]})
    rt.dispatch(limit=1000)
    clock.advance(2)
    webhook.default = DeliveryResult(True, message_id="ok")
    pending = [rt.accept("svc", {"source": "web", "title": f"ack me {i}", "channels": ["console"],
                                 "require_ack": True}).notification.id for i in range(8)]
    rt.dispatch(limit=1000)
    clock.advance(2)
    for nid in pending[:4]:  # at one instant: the audit's keyset breaks the tie by id
        rt.acknowledge(nid, "bob")
    return Notification.objects.filter(dead_letter=True).values_list("id", flat=True).first()


def _everything(path: str, dead: str) -> tuple[str, set]:
    """(url, every id the list holds, read from the tables directly) for one list."""
    dlq = set(Notification.objects.filter(status="FAILED", dead_letter=True).values_list("id", flat=True))
    return {
        "/api/v1/notifications?order=desc": set(Notification.objects.values_list("id", flat=True)),
        "/api/v1/notifications?order=asc": set(Notification.objects.values_list("id", flat=True)),
        "/api/v1/notifications/{dead}/timeline": set(Event.objects.filter(notification_id=dead)
                                                     .values_list("id", flat=True)),
        "/api/v1/dlq": dlq,
        "/ui/dlq": dlq,
        "/ui/inbox": set(Notification.objects.filter(ack_status="PENDING").values_list("id", flat=True)),
        "/ui/audit": set(PeopleAuditRecord.objects.values_list("id", flat=True)),
        "/api/v1/audit": set(PeopleAuditRecord.objects.values_list("id", flat=True)),
    }[path]


LISTS = ["/api/v1/notifications?order=desc", "/api/v1/notifications?order=asc",
         "/api/v1/notifications/{dead}/timeline", "/api/v1/dlq", "/ui/dlq", "/ui/inbox", "/ui/audit",
         "/api/v1/audit"]


def _get(client, url: str, params: dict):
    """GET ``url`` (which may carry a query) with ``params`` added (the test client would
    otherwise drop the query written in the path)."""
    path, _, query = url.partition("?")
    return client.get(path, {**dict(parse_qsl(query)), **params})


def _walk(client, url: str, limit: int) -> list[str]:
    seen, cursor = [], None
    for _ in range(200):
        response = _get(client, url, {"limit": limit, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.content
        body = response.json()
        assert len(body["items"]) <= limit
        assert "next_cursor" not in body and "after" not in body
        seen += [i["id"] for i in body["items"]]
        cursor = body["next"]
        if cursor is None:
            return seen
    raise AssertionError("pagination did not end")


@pytest.mark.parametrize("path", LISTS)
def test_every_list_walks_to_its_end_with_next_seeing_each_item_once(world, reader, path):
    url = path.format(dead=world)
    expected = _everything(path, world)
    assert len(expected) >= 4
    one_page = [i["id"] for i in _get(reader, url, {"limit": 500}).json()["items"]]
    assert sorted(one_page) == sorted(expected)
    for limit in (1, 2, 3, 7):
        walked = _walk(reader, url, limit)
        assert walked == one_page, limit  # each exactly once, in the list's order


@pytest.mark.parametrize("path", LISTS)
def test_every_list_has_one_limit_rule_and_refuses_a_foreign_cursor(world, reader, path):
    url = path.format(dead=world)
    assert _get(reader, url, {"limit": 500}).status_code == 200
    for bad in ("0", "501", "ten"):
        body = assert_problem(_get(reader, url, {"limit": bad}), 400, "invalid_request")
        assert [e["field"] for e in body["errors"]] == ["limit"]
    assert len(_get(reader, url, {}).json()["items"]) == min(100, len(_everything(path, world)))  # default 100
    for other in LISTS:
        if other == path or {other, path} in ({"/api/v1/dlq", "/ui/dlq"}, {"/api/v1/audit", "/ui/audit"}):
            # the DLQ and the audit are each one list on both
            continue
        foreign = _get(reader, other.format(dead=world), {"limit": 1}).json()["next"]
        assert foreign, other
        assert_problem(_get(reader, url, {"cursor": foreign}), 400, "invalid_cursor")


def test_an_edited_cursor_is_refused(world, reader):
    import base64
    import json

    cursor = reader.get("/ui/dlq", {"limit": 1}).json()["next"]
    doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    doc["p"][-1] = "0"  # jump to another position without the key
    edited = base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")
    for url in ("/ui/dlq", "/api/v1/dlq"):
        assert_problem(reader.get(url, {"cursor": edited}), 400, "invalid_cursor")
        assert reader.get(url, {"cursor": cursor}).status_code == 200


# --- failed_at --------------------------------------------------------------------------------

def _failed_at_on_both(reader, nid: str) -> tuple[float, float]:
    [api_item] = [i for i in reader.get("/api/v1/dlq").json()["items"] if i["id"] == nid]
    [ui_item] = [i for i in reader.get("/ui/dlq").json()["items"] if i["id"] == nid]
    assert api_item["failed_at_iso"] == ui_item["failed_at_iso"]
    return api_item["failed_at"], ui_item["failed_at"]


def test_failed_at_is_the_dead_lettering_settle_on_both_endpoints(api_rt, clock, webhook, channel, reader):
    rt = api_rt
    nid = rt.accept("svc", {"source": "billing", "title": "card declined", "channels": ["ops-hook"]}).notification.id
    dead_at = exhaust(rt, clock, webhook, nid)
    clock.advance(500)  # reading later changes nothing
    row = Notification.objects.get(id=nid)
    assert row.next_attempt != dead_at  # the old, wrong source
    [settle] = [e for e in Event.objects.filter(notification_id=nid, kind=timeline.DELIVERY_RESULT)
                if e.payload["dead_letter"]]
    assert settle.at == dead_at
    assert _failed_at_on_both(reader, nid) == (dead_at, dead_at)

    # Replayed and dead-lettered again: the newer settle, on both.
    assert reader.post(f"/api/v1/dlq/{nid}/replay").status_code == 200
    clock.advance(100)
    again = exhaust(rt, clock, webhook, nid)
    assert again > dead_at
    clock.advance(7)
    assert _failed_at_on_both(reader, nid) == (again, again)
    overview = reader.get("/ui/overview").json()["dlq"]
    assert overview["oldest_failed_at"] == again
