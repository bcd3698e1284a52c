"""PagerDuty Events API v2 compatible intake: POST /api/v1/integrations/pagerduty/v2/enqueue.

Payloads follow PagerDuty's documented alert events (trigger, acknowledge, resolve)."""
import json
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from notifications.models import Event, Notification

from api.helpers import row_counts

pytestmark = pytest.mark.django_db

URL = "/api/v1/integrations/pagerduty/v2/enqueue"


def trigger_event(routing_key: str, **overrides) -> dict:
    """The shape of PagerDuty's documented trigger example."""
    event = {
        "payload": {
            "summary": "Example alert on host1.example.com",
            "timestamp": "2015-07-17T08:42:58.315+0000",
            "source": "monitoringtool:cloudvendor:central-region-dc-01:852559987:cluster/api-stats-prod-003",
            "severity": "critical",
            "component": "postgres",
            "group": "prod-datapipe",
            "class": "deploy",
            "custom_details": {"ping time": "1500ms", "load avg": 0.75},
        },
        "routing_key": routing_key,
        "dedup_key": "samplekeyhere",
        "images": [{"src": "https://monitoring.example.com/graph.png", "href": "https://example.com/", "alt": "graph"}],
        "links": [{"href": "https://example.com/", "text": "Link text"}],
        "event_action": "trigger",
        "client": "Sample Monitoring Service",
        "client_url": "https://monitoring.example.com",
    }
    event.update(overrides)
    return event


def send(event, **kwargs):
    return APIClient().post(URL, event, format="json", **kwargs)


def assert_invalid(response, *fragments) -> list[str]:
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["status"] == "invalid event" and body["message"] == "Event object is invalid", body
    assert isinstance(body["errors"], list) and body["errors"]
    for fragment in fragments:
        assert any(fragment in e for e in body["errors"]), (fragment, body["errors"])
    return body["errors"]


@pytest.fixture
def keys(make_principal, api_rt):
    """Routing keys (knox tokens) of a producer+responder monitor, a producer-only one, a
    responder-only one and a second producer+responder monitor."""
    return {
        "monitor": make_principal("pd-monitor", ("producer", "responder"))[1],
        "producer_only": make_principal("pd-producer", ("producer",))[1],
        "responder_only": make_principal("pd-responder", ("responder",))[1],
        "other": make_principal("pd-other", ("producer", "responder"))[1],
    }


def test_trigger_maps_the_event_onto_a_notification(keys):
    response = send(trigger_event(keys["monitor"]))
    assert response.status_code == 202, response.content
    body = response.json()
    assert {k: body[k] for k in ("status", "message", "dedup_key")} == {
        "status": "success", "message": "Event processed", "dedup_key": "samplekeyhere"}
    row = Notification.objects.get(id=body["uns"]["notification_id"])
    n = row.notification
    assert row.principal == "pd-monitor"
    assert n["source"].startswith("monitoringtool:cloudvendor") and n["title"] == "Example alert on host1.example.com"
    assert n["severity"] == "critical" and n["dedup_key"] == "samplekeyhere" and n["require_ack"] is True
    pd = n["metadata"]["pagerduty"]
    assert pd["component"] == "postgres" and pd["group"] == "prod-datapipe" and pd["class"] == "deploy"
    assert pd["custom_details"] == {"ping time": "1500ms", "load avg": 0.75}
    assert pd["timestamp"] == "2015-07-17T08:42:58.315+0000"
    assert pd["links"] == [{"href": "https://example.com/", "text": "Link text"}]
    assert pd["images"][0]["src"] == "https://monitoring.example.com/graph.png"
    assert pd["client"] == "Sample Monitoring Service" and pd["client_url"] == "https://monitoring.example.com"
    assert "component: postgres" in n["body"] and "load avg" in n["body"]
    # the routing key is a credential: never stored, never echoed
    assert keys["monitor"] not in json.dumps(n) and keys["monitor"] not in response.content.decode()


def test_trigger_without_dedup_key_generates_and_returns_one(keys):
    event = trigger_event(keys["monitor"])
    del event["dedup_key"]
    body = send(event).json()
    assert len(body["dedup_key"]) == 32 and int(body["dedup_key"], 16) >= 0
    row = Notification.objects.get(id=body["uns"]["notification_id"])
    assert row.notification["dedup_key"] == body["dedup_key"]
    assert send(trigger_event(keys["monitor"], dedup_key=None)).json()["dedup_key"] != body["dedup_key"]


def test_minimal_trigger_and_long_summary(keys):
    summary = "x" * 1024
    event = {"routing_key": keys["monitor"], "event_action": "trigger",
             "payload": {"summary": summary, "source": "host1", "severity": "info"}}
    response = send(event)
    assert response.status_code == 202, response.content
    n = Notification.objects.get(id=response.json()["uns"]["notification_id"]).notification
    assert len(n["title"]) == 500 and n["title"].endswith("\u2026") and summary in n["body"]
    assert n["metadata"]["pagerduty"] == {}


def test_large_custom_details_stay_in_the_body(keys):
    details = {"stack": "frame\n" * 4000}
    event = trigger_event(keys["monitor"])
    event["payload"]["custom_details"] = details
    response = send(event)
    assert response.status_code == 202, response.content
    n = Notification.objects.get(id=response.json()["uns"]["notification_id"]).notification
    assert n["metadata"]["pagerduty"]["custom_details_omitted"] is True
    assert n["metadata"]["pagerduty"]["component"] == "postgres"
    assert "frame" in n["body"]


def test_repeated_triggers_coalesce_on_the_dedup_key(keys):
    first = send(trigger_event(keys["monitor"])).json()
    second = send(trigger_event(keys["monitor"])).json()
    assert first["uns"]["dedup_role"] == "leader"
    assert second["uns"]["dedup_role"] == "follower"
    assert Notification.objects.get(id=second["uns"]["notification_id"]).dedup_owner_id == first["uns"]["notification_id"]


@pytest.mark.parametrize("action, ack_status", [("acknowledge", "ACKED"), ("resolve", "DISMISSED")])
def test_acknowledge_and_resolve_settle_the_open_notification(keys, api_rt, action, ack_status):
    nid = send(trigger_event(keys["monitor"])).json()["uns"]["notification_id"]
    api_rt.dispatch()
    assert Notification.objects.get(id=nid).ack_status == "PENDING"
    response = send({"routing_key": keys["monitor"], "dedup_key": "samplekeyhere", "event_action": action})
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "success" and body["dedup_key"] == "samplekeyhere"
    assert body["uns"] == {"settled": [nid], "before_delivery": [], "unsettled": [], "escalations_stopped": []}
    row = Notification.objects.get(id=nid)
    assert (row.ack_status, row.actor) == (ack_status, "pd-monitor")
    assert row.response_metadata == {"via": "pagerduty", "event_action": action}
    # a repeat (PagerDuty clients retry) is a no-op success
    again = send({"routing_key": keys["monitor"], "dedup_key": "samplekeyhere", "event_action": action})
    assert again.status_code == 202 and again.json()["uns"] == {"settled": [], "before_delivery": [], "unsettled": [], "escalations_stopped": []}


@pytest.mark.parametrize("dedup_key", ["12345", "1.5", "true", "null", 'quote"d \\ key', "\u00e9v\u00e9nement/\u2603"])
def test_dedup_keys_that_look_like_json_scalars_still_match(keys, api_rt, dedup_key):
    nid = send(trigger_event(keys["monitor"], dedup_key=dedup_key)).json()["uns"]["notification_id"]
    send(trigger_event(keys["monitor"], dedup_key=dedup_key + "0"))
    api_rt.dispatch()
    body = send({"routing_key": keys["monitor"], "dedup_key": dedup_key, "event_action": "acknowledge"}).json()
    assert body["uns"]["settled"] == [nid]


def test_resolve_after_acknowledge_leaves_the_ack(keys, api_rt):
    nid = send(trigger_event(keys["monitor"])).json()["uns"]["notification_id"]
    api_rt.dispatch()
    send({"routing_key": keys["monitor"], "dedup_key": "samplekeyhere", "event_action": "acknowledge"})
    assert send({"routing_key": keys["monitor"], "dedup_key": "samplekeyhere",
                 "event_action": "resolve"}).status_code == 202
    assert Notification.objects.get(id=nid).ack_status == "ACKED"


def test_acknowledge_before_delivery_is_remembered_and_settled_once_delivered(keys, api_rt):
    nid = send(trigger_event(keys["monitor"])).json()["uns"]["notification_id"]
    response = send({"routing_key": keys["monitor"], "dedup_key": "samplekeyhere", "event_action": "acknowledge"})
    assert response.status_code == 202
    assert response.json()["uns"] == {"settled": [], "unsettled": [], "before_delivery": [
        {"id": nid, "response": "ACKED", "resolved": False, "withheld": False}], "escalations_stopped": []}
    assert Notification.objects.get(id=nid).ack_status is None
    api_rt.run_once()  # delivered, then the remembered acknowledge settles it in the same pass
    row = Notification.objects.get(id=nid)
    assert (row.status, row.ack_status, row.actor) == ("DELIVERED", "ACKED", "pd-monitor")
    assert row.response_metadata["before_delivery"] is True


def test_trigger_trigger_acknowledge_resolve_before_delivery_pages_nobody(keys, api_rt):
    first = send(trigger_event(keys["monitor"])).json()["uns"]["notification_id"]
    second = send(trigger_event(keys["monitor"])).json()["uns"]["notification_id"]
    assert Notification.objects.get(id=second).dedup_owner_id == first
    send({"routing_key": keys["monitor"], "dedup_key": "samplekeyhere", "event_action": "acknowledge"})
    body = send({"routing_key": keys["monitor"], "dedup_key": "samplekeyhere", "event_action": "resolve"}).json()
    assert {e["id"]: e["withheld"] for e in body["uns"]["before_delivery"]} == {first: True, second: True}
    api_rt.run_once()
    api_rt.run_once()
    for nid in (first, second):
        row = Notification.objects.get(id=nid)
        assert (row.status, row.dead_letter, row.ack_status) == ("FAILED", False, None)
        kinds = list(Event.objects.filter(notification_id=nid).order_by("at", "id").values_list("kind", flat=True))
        assert "DELIVERY_WITHHELD" in kinds and "ATTEMPT_STARTED" not in kinds
    assert not Event.objects.filter(kind="CHANNEL_ATTEMPT_STARTED").exists()


def test_change_events_are_informational_notifications(keys, api_rt):
    response = APIClient().post("/api/v1/integrations/pagerduty/v2/change/enqueue", {
        "routing_key": keys["monitor"], "payload": {"summary": "deployed v42", "source": "ci",
                                                     "custom_details": {"sha": "abc"}},
        "links": [{"href": "https://ci.example/42", "text": "build"}]}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "success" and body["message"] == "Change event processed"
    row = Notification.objects.get(id=body["uns"]["notification_id"])
    n = row.notification
    assert (n["title"], n["source"], n["severity"], n["require_ack"]) == ("deployed v42", "ci", "info", False)
    assert n["metadata"]["pagerduty_change"]["custom_details"] == {"sha": "abc"}
    api_rt.dispatch()
    row.refresh_from_db()
    assert (row.status, row.ack_status) == ("DELIVERED", None)


def test_bad_change_events_are_refused_in_pagerdutys_shape(keys):
    response = APIClient().post("/api/v1/integrations/pagerduty/v2/change/enqueue",
                          {"routing_key": keys["monitor"], "payload": {"source": "ci"}}, format="json")
    assert response.status_code == 400
    assert response.json()["status"] == "invalid event" and any("summary" in e for e in response.json()["errors"])


def test_unknown_dedup_key_is_dropped_like_pagerduty_does(keys):
    response = send({"routing_key": keys["monitor"], "dedup_key": "never-sent", "event_action": "resolve"})
    assert response.status_code == 202 and response.json()["uns"] == {"settled": [], "before_delivery": [],
                                                                      "unsettled": [], "escalations_stopped": []}


def test_acknowledge_only_touches_the_routing_keys_own_notifications(keys, api_rt):
    mine = send(trigger_event(keys["monitor"])).json()["uns"]["notification_id"]
    theirs = send(trigger_event(keys["other"])).json()["uns"]["notification_id"]
    api_rt.dispatch()
    body = send({"routing_key": keys["other"], "dedup_key": "samplekeyhere", "event_action": "acknowledge"}).json()
    assert body["uns"]["settled"] == [theirs]
    assert Notification.objects.get(id=mine).ack_status == "PENDING"


def test_a_producer_only_key_cannot_acknowledge_or_resolve(keys, api_rt):
    nid = send(trigger_event(keys["producer_only"])).json()["uns"]["notification_id"]
    api_rt.dispatch()
    for action in ("acknowledge", "resolve"):
        response = send({"routing_key": keys["producer_only"], "dedup_key": "samplekeyhere", "event_action": action})
        assert_invalid(response, "responder")
    assert Notification.objects.get(id=nid).ack_status == "PENDING"


def test_a_key_without_the_producer_capability_cannot_trigger(keys):
    before = row_counts()
    assert_invalid(send(trigger_event(keys["responder_only"])), "producer")
    assert row_counts() == before


def test_unknown_expired_and_missing_routing_keys(keys, make_principal):
    from knox.models import AuthToken

    user, _ = make_principal("pd-expired", ("producer", "responder"))
    _, expired = AuthToken.objects.create(user=user, expiry=timedelta(seconds=-5))
    before = row_counts()
    assert_invalid(send(trigger_event("0" * 32)), "Invalid routing key")
    assert_invalid(send(trigger_event(keys["monitor"][:-1] + "x")), "Invalid routing key")
    assert_invalid(send(trigger_event(expired)), "Invalid routing key")
    for missing in (None, "", "   "):
        assert_invalid(send(trigger_event(missing)), "routing_key")
    no_key = trigger_event("x")
    del no_key["routing_key"]
    assert_invalid(send(no_key), "routing_key")
    # a Bearer header does not stand in for the routing key
    assert_invalid(send(no_key, HTTP_AUTHORIZATION=f"Bearer {keys['monitor']}"), "routing_key")
    assert row_counts() == before


@pytest.mark.parametrize("change, fragment", [
    ({"event_action": None}, "event_action"),
    ({"event_action": "snooze"}, "event_action"),
    ({"payload": None}, "payload"),
    ({"payload": "disk full"}, "payload"),
    ({"payload": {"source": "h", "severity": "info"}}, "payload.summary"),
    ({"payload": {"summary": "  ", "source": "h", "severity": "info"}}, "payload.summary"),
    ({"payload": {"summary": "s" * 1025, "source": "h", "severity": "info"}}, "payload.summary"),
    ({"payload": {"summary": "s", "severity": "info"}}, "payload.source"),
    ({"payload": {"summary": "s", "source": "h", "severity": "fatal"}}, "payload.severity"),
    ({"payload": {"summary": "s", "source": "h"}}, "payload.severity"),
    ({"payload": {"summary": "s", "source": "h", "severity": "info", "timestamp": "yesterday"}}, "payload.timestamp"),
    ({"payload": {"summary": "s", "source": "h", "severity": "info", "component": 5}}, "payload.component"),
    ({"dedup_key": "k" * 256}, "dedup_key"),
    ({"dedup_key": 42}, "dedup_key"),
    ({"links": {"href": "https://example.com"}}, "links"),
    ({"links": [{"text": "no href"}]}, "links[0].href"),
    ({"images": [{"href": "https://example.com"}]}, "images[0].src"),
    ({"images": ["https://example.com/i.png"]}, "images[0]"),
    ({"client": ["x"]}, "client"),
    ({"links": [{"href": "https://example.com/" + "x" * 17000}]}, "metadata"),
])
def test_bad_trigger_events_are_invalid_and_write_nothing(keys, change, fragment):
    before = row_counts()
    assert_invalid(send(trigger_event(keys["monitor"], **change)), fragment)
    assert row_counts() == before


def test_every_problem_is_listed(keys):
    errors = assert_invalid(send({"routing_key": keys["monitor"], "event_action": "trigger",
                                  "payload": {"severity": "urgent"}}))
    assert len(errors) == 3  # summary, source, severity


@pytest.mark.parametrize("action", ["acknowledge", "resolve"])
def test_acknowledge_and_resolve_need_a_dedup_key(keys, action):
    assert_invalid(send({"routing_key": keys["monitor"], "event_action": action}), "dedup_key")


def test_bodies_that_are_not_a_json_event(keys):
    client = APIClient()
    assert_invalid(client.post(URL, "{not json", content_type="application/json"), "JSON")
    assert_invalid(client.post(URL, "[1, 2]", content_type="application/json"), "JSON object")
    assert_invalid(client.post(URL, "", content_type="application/json"), "routing_key")
    assert_invalid(client.post(URL, f"routing_key={keys['monitor']}", content_type="application/x-www-form-urlencoded"),
                   "JSON")


def test_other_methods_are_refused(keys):
    assert APIClient().get(URL).status_code in (400, 405)
