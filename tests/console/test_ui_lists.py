"""/ui lists at scale: every list pages to the end with a total, filters and groups by source,
severity, channel, error reason and dedup key, and the DLQ sorts by failure time with an age."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from notifications.adapters.base import DeliveryResult
from notifications.models import Notification, NotificationAuditRecord

pytestmark = pytest.mark.django_db


def walk(client, path: str) -> tuple[list[dict], list[dict]]:
    """Every item of a paged list and every page body."""
    items, pages, cursor = [], [], None
    while True:
        sep = "&" if "?" in path else "?"
        page = client.get(path + (f"{sep}cursor={cursor}" if cursor else "")).json()
        pages.append(page)
        items += page["items"]
        cursor = page["next"]
        if not cursor:
            return items, pages


@pytest.fixture
def storm(rt, clock, webhook, channel):
    """7 dead letters (4 'billing' refused, 3 'db' HTTP 410, failing one second apart, accepted in
    reverse order of failure for the billing ones) and 5 pending acknowledgements."""
    ids = {"billing": [], "db": [], "inbox": []}
    webhook.default = DeliveryResult(False, retryable=False, error="connection refused")
    for i in range(4):
        ids["billing"].append(rt.accept("svc", {"source": "billing", "title": f"refused {i}", "severity": "critical",
                                                "channels": ["ops-hook"], "dedup_key": f"b{i}"}).notification.id)
        clock.advance(1)  # accepted in this order
    rt.dispatch(limit=100)
    # They failed newest-accepted first, one second apart (the settle's time: its audit row and
    # the row's failed_at).
    for age, nid in enumerate(ids["billing"]):
        NotificationAuditRecord.objects.filter(notification_id=nid, status="FAILED").update(created_at=clock.now - age)
        Notification.objects.filter(id=nid).update(failed_at=clock.now - age)
    clock.advance(1)
    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    for i in range(3):
        ids["db"].append(rt.accept("svc", {"source": "db", "title": f"gone {i}", "channels": ["ops-hook"]}).notification.id)
    clock.advance(1)
    rt.dispatch(limit=100)
    webhook.default = DeliveryResult(True, message_id="ok")
    for i in range(5):
        ids["inbox"].append(rt.accept("svc", {"source": "web" if i < 3 else "app", "title": f"ack me {i}",
                                              "severity": "critical" if i % 2 else "warning", "channels": ["console"],
                                              "require_ack": True, "dedup_key": f"k{i}"}).notification.id)
    rt.dispatch(limit=100)
    clock.advance(1)
    return ids


def test_every_list_pages_to_the_end_with_a_total(ui, storm):
    client = ui(groups=("operator",))
    for path, n in (("/ui/dlq?limit=2", 7), ("/ui/inbox?limit=2", 5)):
        items, pages = walk(client, path)
        assert len({i["id"] for i in items}) == len(items)
        total = pages[0]["total"]
        assert all(p["total"] == total and p["total_capped"] is False for p in pages)
        assert len(items) == total and (n is None or total == n), path


def test_a_total_past_the_cap_says_so(ui, storm, monkeypatch):
    from notifications import pagination
    monkeypatch.setattr(pagination, "TOTAL_CAP", 3)
    monkeypatch.setattr(pagination.bounded_total, "__defaults__", (3,))
    # a filter no maintained count answers (q: title or source contains), so the rows are counted
    body = ui().get("/ui/dlq?q=e").json()
    assert (body["total"], body["total_capped"], len(body["items"])) == (3, True, 7)


def test_dlq_sorts_by_failure_time_with_age_both_ways_and_by_acceptance(ui, storm, clock):
    client = ui()
    oldest_first, _ = walk(client, "/ui/dlq?limit=3&sort=failed")
    failed = [i["failed_at"] for i in oldest_first]
    assert failed == sorted(failed)
    # The billing ones failed newest-accepted first, so failure order is not acceptance order.
    assert [i["id"] for i in oldest_first[:4]] == list(reversed(storm["billing"]))
    assert all(i["age_seconds"] == pytest.approx(clock.now - i["failed_at"]) for i in oldest_first)
    newest_first, _ = walk(client, "/ui/dlq?limit=3&sort=-failed")
    assert [i["id"] for i in newest_first] == [i["id"] for i in reversed(oldest_first)]
    accepted, _ = walk(client, "/ui/dlq?limit=3")  # the default, as GET /api/v1/dlq
    assert [i["id"] for i in accepted] == [i["id"] for i in sorted(oldest_first, key=lambda i: (i["accepted_at"], i["id"]))]
    assert [i["id"] for i in accepted] != [i["id"] for i in oldest_first]


def test_a_cursor_of_another_sort_is_refused(ui, storm):
    client = ui()
    cursor = client.get("/ui/dlq?limit=2&sort=failed").json()["next"]
    response = client.get(f"/ui/dlq?limit=2&cursor={cursor}")
    assert response.status_code == 400 and response.json()["code"] == "invalid_cursor"


@pytest.mark.parametrize("query,expected", [
    ("source=billing", "billing"), ("severity=critical", "billing"), ("channel=ops-hook", "all"),
    ("channel=ops", "none"), ("reason=REFUSED", "billing"), ("reason=410", "db"), ("dedup_key=b1", "b1"),
    ("source=db&reason=refused", "none"), ("q=gone", "db"),
])
def test_dlq_filters(ui, storm, query, expected):
    body = ui().get(f"/ui/dlq?{query}").json()
    ids = {i["id"] for i in body["items"]}
    want = {"billing": set(storm["billing"]), "db": set(storm["db"]), "all": set(storm["billing"] + storm["db"]),
            "none": set(), "b1": {storm["billing"][1]}}[expected]
    assert ids == want
    assert body["total"] == len(want)


def test_inbox_filters_and_groups(ui, storm):
    client = ui()
    assert {i["id"] for i in client.get("/ui/inbox?source=web").json()["items"]} == set(storm["inbox"][:3])
    assert client.get("/ui/inbox?severity=critical").json()["total"] == 2
    assert [i["id"] for i in client.get("/ui/inbox?dedup_key=k1").json()["items"]] == [storm["inbox"][1]]
    assert client.get("/ui/inbox?channel=console").json()["total"] == 5
    groups = client.get("/ui/inbox/groups?by=source").json()
    assert groups == {"by": "source", "groups": [{"value": "web", "count": 3}, {"value": "app", "count": 2}]}
    by_severity = client.get("/ui/inbox/groups?by=severity&source=web").json()["groups"]
    assert by_severity == [{"value": "warning", "count": 2}, {"value": "critical", "count": 1}]


def test_dlq_groups_by_reason_channel_and_source(ui, storm):
    client = ui()
    reasons = client.get("/ui/dlq/groups?by=reason").json()["groups"]
    assert reasons == [{"value": "ops-hook: connection refused", "count": 4}, {"value": "ops-hook: HTTP 410 gone", "count": 3}]
    assert client.get("/ui/dlq/groups?by=channel").json()["groups"] == [{"value": ["ops-hook"], "count": 7}]
    assert client.get("/ui/dlq/groups?by=source&severity=critical").json()["groups"] == [{"value": "billing", "count": 4}]


@pytest.mark.parametrize("path,field", [
    ("/ui/dlq?sort=newest", "sort"), ("/ui/dlq?sauce=billing", "sauce"), ("/ui/inbox?reason=x", "reason"),
    ("/ui/dlq/groups?by=title", "by"), ("/ui/inbox/groups?by=reason", "by"), ("/ui/audit?kind=ack", "kind"),
    ("/ui/dlq?source=a&source=b", "source"),
])
def test_bad_list_parameters_are_400_naming_the_field(ui, storm, path, field):
    response = ui().get(path)
    assert response.status_code == 400, response.content
    body = response.json()
    assert response["Content-Type"].startswith("application/problem+json")
    assert body["code"] == "invalid_request" and [e["field"] for e in body["errors"]] == [field]



def test_dead_letters_and_details_carry_the_failure_hint(ui, storm):
    client = ui()
    by_id = {i["id"]: i for i in client.get("/ui/dlq").json()["items"]}
    assert "running and listening" in by_id[storm["billing"][0]]["failure_hint"]
    assert "URL path" in by_id[storm["db"][0]]["failure_hint"]
    detail = client.get(f"/ui/notifications/{storm['db'][0]}").json()
    assert "URL path" in detail["failure_hint"]
    assert "URL path" in detail["channels"][0]["last"]["hint"]


def test_all_notifications_filter_as_the_listing_api_does_with_a_total(ui, storm):
    client = ui()
    failed = client.get("/ui/notifications?status=FAILED&limit=3").json()
    assert failed["total"] == 7 and len(failed["items"]) == 3 and failed["next"]
    every, _ = walk(client, "/ui/notifications?status=FAILED&limit=3")
    api = client.get("/api/v1/notifications?status=FAILED&limit=500").json()["items"]
    assert [i["id"] for i in every] == [i["id"] for i in api]
    pending = client.get("/ui/notifications?ack_status=PENDING&source=web").json()
    assert {i["id"] for i in pending["items"]} == set(storm["inbox"][:3]) and pending["total"] == 3
    assert client.get("/ui/notifications?order=asc").json()["total"] == 12
    # one status, ack status or source filter: counted exactly (maintained counts on PostgreSQL)
    for query, want in (("source=billing", 4), ("source=web", 3), ("source=none", 0), ("ack_status=PENDING,NONE", 12),
                        ("status=FAILED,DELIVERED", 12), ("ack_status=NONE", 7), ("dead_letter=true", 7)):
        body = client.get(f"/ui/notifications?{query}&limit=1").json()
        assert (body["total"], body["total_capped"]) == (want, False), query
    bad = client.get("/ui/notifications?status=LOST")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "status"
    assert client.get("/ui/notifications?colour=red").status_code == 400


def test_all_notifications_tell_a_resolved_dead_letter_from_a_live_failure(ui, storm, rt):
    """``resolved``: FAILED and out of the DLQ by an operator's resolve (FAILURE_RESOLVED), shown
    apart from a dead letter; a replayed one is not resolved. One query for the page, whatever
    its size (``selectors.settled_without_delivery``)."""
    resolved, replayed, live = storm["billing"][:3]
    rt.resolve_failure(resolved, "olga")
    rt.replay(replayed, "olga")
    client = ui(groups=("operator",))
    items = {i["id"]: i for i in walk(client, "/ui/notifications?limit=5")[0]}
    assert (items[resolved]["status"], items[resolved]["dead_letter"], items[resolved]["resolved"]) == ("FAILED", False, True)
    assert (items[live]["dead_letter"], items[live]["resolved"]) == (True, False)
    assert items[replayed]["resolved"] is False
    assert not any(i["resolved"] for nid, i in items.items() if nid != resolved)
    counts = []
    for more in (None, live, storm["billing"][3], storm["db"][0]):  # one, then more resolved rows on the page
        if more:
            rt.resolve_failure(more, "olga")
        with CaptureQueriesContext(connection) as seen:
            body = client.get("/ui/notifications?limit=12").json()
        counts.append(len(seen.captured_queries))
    assert sum(i["resolved"] for i in body["items"]) == 4
    assert len(set(counts)) == 1, counts


def test_all_notifications_tell_a_withheld_page_from_a_failure(ui, storm, rt):
    """``withheld``: FAILED and never sent because its source resolved it first
    (``DELIVERY_WITHHELD``), shown apart from a dead letter and from a resolved one; the page's
    query count does not grow with it (``selectors.settled_without_delivery``)."""
    client = ui(groups=("operator",))
    resolved = storm["billing"][0]
    rt.resolve_failure(resolved, "olga")
    with CaptureQueriesContext(connection) as before:
        client.get("/ui/notifications?limit=20")
    held = rt.accept("svc", {"source": "web", "title": "fixed itself", "channels": ["ops-hook"],
                             "require_ack": True}).notification.id
    rt.respond_before_delivery(held, "pd", dismiss=True, resolved=True, metadata={"via": "pagerduty"})
    with CaptureQueriesContext(connection) as after:
        items = {i["id"]: i for i in client.get("/ui/notifications?limit=20").json()["items"]}
    assert len(after.captured_queries) == len(before.captured_queries)
    assert (items[held]["status"], items[held]["dead_letter"], items[held]["withheld"], items[held]["resolved"]) == (
        "FAILED", False, True, False)
    assert (items[resolved]["withheld"], items[resolved]["resolved"]) == (False, True)
    assert [nid for nid, i in items.items() if i["withheld"]] == [held]
    assert not items[storm["billing"][1]]["withheld"] and items[storm["billing"][1]]["dead_letter"]
