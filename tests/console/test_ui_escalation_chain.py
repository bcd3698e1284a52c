"""``/ui/notifications/{id}`` shows the escalation chain: which level is active, what
fired when, who responded; ``/ui/inbox`` says whether Escalate applies; one query more only for
a notification that was escalated."""
import json
from copy import deepcopy

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from notifications.models import Channel, Event, Notification

pytestmark = pytest.mark.django_db

CHAIN = {"levels": [{"channels": ["lead"], "wait_seconds": 60}, {"channels": ["manager"], "wait_seconds": 120}]}


@pytest.fixture
def chained(settings, tmp_path):
    from policies import bootstrap
    from policies.content import BOOTSTRAP_CONTENT

    def clear():
        for name in ("bootstrap_content", "load_bootstrap_file"):
            getattr(getattr(bootstrap, name, None), "cache_clear", lambda: None)()

    content = deepcopy(BOOTSTRAP_CONTENT)
    content["rules"] = [{"name": "paged", "match": {"source": "paged"}, "set": {"escalation": CHAIN}}]
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(content))
    settings.UNS_BOOTSTRAP_POLICY_FILE = str(path)
    clear()
    for name in ("lead", "manager"):
        Channel.objects.create(name=name, kind="console", config={})
    yield
    clear()


def delivered(rt, clock, source="paged"):
    nid = rt.accept("alice", {"source": source, "title": "disk full", "channels": ["ops-hook"],
                              "require_ack": True}).notification.id
    clock.advance(5)
    rt.dispatch()
    return nid


def test_the_detail_shows_the_active_level_what_fired_and_who_responded(ui, rt, clock, channel, chained):
    nid = delivered(rt, clock)
    client = ui()
    before = client.get(f"/ui/notifications/{nid}").json()["escalation"]
    assert (before["state"], before["active_level"], before["fired"], before["can_escalate"]) == (None, 0, [], True)
    assert before["starts_on_timeout"] is True
    assert [lv["channels"] for lv in before["levels"]] == [["lead"], ["manager"]]
    clock.now = Notification.objects.get(id=nid).deadline
    rt.expire()  # level 1 fires
    rt.dispatch()
    view = client.get(f"/ui/notifications/{nid}").json()["escalation"]
    assert (view["state"], view["active_level"], view["next"]) == ("ACTIVE", 1, {"level": 2, "repetition": 1})
    assert view["next_due"] == clock.now + 60
    [fired] = view["fired"]
    assert (fired["level"], fired["channels"], fired["actor"], fired["at"]) == (1, ["lead"], "uns-timeout-worker", clock.now)
    first = fired["escalation_id"]
    escalation = client.get(f"/ui/notifications/{first}").json()
    assert escalation["escalated_from"] == {"id": nid, "level": 1}
    # an escalation's own chain starts only by hand: its deadline passing starts nothing
    assert escalation["escalation"]["starts_on_timeout"] is False
    inbox = {i["id"]: i for i in client.get("/ui/inbox").json()["items"]}
    assert first in inbox

    clock.advance(10)
    rt.acknowledge(first, "carol")
    view = client.get(f"/ui/notifications/{nid}").json()["escalation"]
    assert view["state"] == "RESPONDED" and view["can_escalate"] is False and view["next"] is None
    assert view["stopped"] == {"actor": "carol", "response": "ACKED", "responded_on": first, "level": 1,
                               "at": clock.now}
    assert (view["fired"][0]["responded_by"], view["fired"][0]["responded_at"]) == ("carol", clock.now)
    kinds = [e["kind"] for e in client.get(f"/ui/notifications/{nid}").json()["timeline"]]
    assert kinds[-3:] == ["TIMED_OUT", "ESCALATED", "ESCALATION_STOPPED"]


def test_without_a_chain_nothing_is_shown_and_escalate_is_not_offered(ui, rt, clock, channel, chained):
    nid = delivered(rt, clock, source="quiet")
    client = ui()
    body = client.get(f"/ui/notifications/{nid}").json()
    assert body["escalation"] is None and body["escalated_from"] is None
    [item] = [i for i in client.get("/ui/inbox").json()["items"] if i["id"] == nid]
    assert item["can_escalate"] is False
    paged = delivered(rt, clock)
    [item] = [i for i in client.get("/ui/inbox").json()["items"] if i["id"] == paged]
    assert item["can_escalate"] is True


def count(client, path) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(path).status_code == 200
    return len(ctx.captured_queries)


def test_an_escalated_notification_costs_one_query_more_whatever_the_levels_fired(ui, rt, clock, channel, chained):
    quiet, paged = delivered(rt, clock, source="quiet"), delivered(rt, clock)
    client = ui()
    base = count(client, f"/ui/notifications/{quiet}")
    clock.now = Notification.objects.get(id=paged).deadline
    rt.expire()
    one = count(client, f"/ui/notifications/{paged}")
    clock.advance(60)
    rt.expire()
    assert Event.objects.filter(notification_id=paged, kind="ESCALATED").count() == 2
    assert count(client, f"/ui/notifications/{paged}") == one == base + 1
