"""``GET /ui/audit`` and ``GET /api/v1/audit``: who did what, when, to what, newest first, with
filters by actor, action, object and time, keyset pages, and 400 problem details for bad input;
delivery attempts are not in it."""
import pytest

from notifications.adapters.base import DeliveryResult
from notifications.runtime import channels

pytestmark = pytest.mark.django_db

URLS = ("/ui/audit", "/api/v1/audit")


@pytest.fixture
def acted(rt, clock, webhook, channel):
    """Two ACKs (ana, then bob a minute later), a dead letter replayed by olga, a channel created
    and disabled by carol, a bulk resolve by olga. Returns ids and times."""
    acks = []
    for i in range(2):
        acks.append(rt.accept("svc", {"source": "web", "title": f"ack me {i}", "channels": ["console"],
                                      "require_ack": True}).notification.id)
    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    dead = [rt.accept("svc", {"source": "billing", "title": f"doomed {i}", "channels": ["ops-hook"]}).notification.id
            for i in range(3)]
    rt.dispatch(limit=100)
    clock.advance(60)
    t_ana = clock.now
    rt.acknowledge(acks[0], "ana")
    clock.advance(60)
    t_bob = clock.now
    rt.acknowledge(acks[1], "bob")
    clock.advance(60)
    rt.replay(dead[0], "olga")
    clock.advance(60)
    channels.create("pager", "console", {}, actor="carol", clock=clock)
    clock.advance(1)
    channels.disable("pager", actor="carol", clock=clock)
    clock.advance(60)
    bulk = rt.create_bulk("olga", {"action": "resolve", "expected": 2})
    rt.run_bulk(bulk.id, "olga")
    return {"acks": acks, "dead": dead, "t_ana": t_ana, "t_bob": t_bob, "bulk": bulk.id}


def actions(client, url, query=""):
    response = client.get(url + query)
    assert response.status_code == 200, response.content
    return [(i["actor"], i["action"], i["object_title"]) for i in response.json()["items"]]


@pytest.mark.parametrize("url", URLS)
def test_newest_first_with_titles_and_no_delivery_attempts(ui, acted, url):
    got = actions(ui(), url)
    # the bulk action and its two items share one instant: their order is the id's
    assert sorted(got[:3]) == [("olga", "BULK_ACTION_CREATED", "resolve 2 of 2 matching (dlq)"),
                               ("olga", "FAILURE_RESOLVED", "doomed 1"), ("olga", "FAILURE_RESOLVED", "doomed 2")]
    assert got[3:] == [
        ("carol", "CHANNEL_DISABLED", "pager (console)"), ("carol", "CHANNEL_CREATED", "pager (console)"),
        ("olga", "REPLAY_REQUESTED", "doomed 0"),
        ("bob", "ACKED", "ack me 1"), ("ana", "ACKED", "ack me 0"),
    ]


@pytest.mark.parametrize("url", URLS)
def test_each_filter(ui, acted, url):
    client = ui()
    assert actions(client, url, "?actor=carol") == [("carol", "CHANNEL_DISABLED", "pager (console)"),
                                                    ("carol", "CHANNEL_CREATED", "pager (console)")]
    assert actions(client, url, "?action=ACKED") == [("bob", "ACKED", "ack me 1"), ("ana", "ACKED", "ack me 0")]
    assert [a for _, a, _ in actions(client, url, "?object_type=channel")] == ["CHANNEL_DISABLED", "CHANNEL_CREATED"]
    one = client.get(url + f"?object_type=notification&object_id={acted['dead'][0]}").json()["items"]
    assert [(i["action"], i["object_id"]) for i in one] == [("REPLAY_REQUESTED", acted["dead"][0])]
    bulk = actions(client, url, f"?bulk_action_id={acted['bulk']}")
    assert sorted(a for _, a, _ in bulk) == ["BULK_ACTION_CREATED", "FAILURE_RESOLVED", "FAILURE_RESOLVED"]
    # since is inclusive, until exclusive; ISO-8601 or epoch seconds
    assert actions(client, url, f"?since={acted['t_ana']}&until={acted['t_bob']}") == [("ana", "ACKED", "ack me 0")]
    assert actions(client, url, "?since=2027-01-15T08:01:00Z&until=2027-01-15T08:02:00Z") == [
        ("ana", "ACKED", "ack me 0")]
    assert actions(client, url, "?actor=carol&action=ACKED") == []
    assert actions(client, url, "?actor=nobody") == []


@pytest.mark.parametrize("url", URLS)
def test_pages_walk_to_the_end_each_row_once(ui, acted, url):
    client = ui()
    everything = [i["id"] for i in client.get(url).json()["items"]]
    assert len(everything) == 8
    for limit in (1, 3):
        seen, cursor = [], None
        while True:
            body = client.get(url, {"limit": limit, **({"cursor": cursor} if cursor else {})}).json()
            assert len(body["items"]) <= limit and "total" not in body
            seen += [i["id"] for i in body["items"]]
            cursor = body["next"]
            if not cursor:
                break
        assert seen == everything
    # a cursor of one filter's list walks that list on (the filter is in the request, not the cursor)
    first = client.get(url, {"action": "FAILURE_RESOLVED", "limit": 1}).json()
    rest = client.get(url, {"action": "FAILURE_RESOLVED", "cursor": first["next"]}).json()
    assert len(first["items"]) == len(rest["items"]) == 1 and rest["next"] is None


BAD = [
    ("action=NOPE", "action"), ("object_type=planet", "object_type"), ("object_id=x", "object_id"),
    ("actor=", "actor"), ("actor=" + "a" * 256, "actor"), ("since=yesterday", "since"), ("until=nan", "until"),
    ("since=20&until=10", "until"), ("limit=0", "limit"), ("cursor=garbage", "cursor"), ("kind=ack", "kind"),
    ("notification_id=x", "notification_id"), ("actor=a&actor=b", "actor"),
]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("query,field", BAD)
def test_bad_filters_are_problem_details_naming_the_field(ui, url, query, field):
    response = ui().get(f"{url}?{query}")
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] in ("invalid_request", "invalid_cursor")
    assert field in [e["field"] for e in body["errors"]], body


def test_the_api_list_needs_the_console_capability(api, acted):
    assert api(groups=("producer",), name="prod").get("/api/v1/audit").status_code == 403
    assert api(groups=("console",), name="reader").get("/api/v1/audit").status_code == 200
