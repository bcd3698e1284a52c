"""Prometheus Alertmanager webhook receiver: POST /api/v1/integrations/alertmanager.

Messages follow Alertmanager's documented webhook payload (version "4")."""
import copy
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from notifications.models import Notification

from api.helpers import assert_problem, row_counts

pytestmark = pytest.mark.django_db

URL = "/api/v1/integrations/alertmanager"

FIRING = {
    "status": "firing",
    "labels": {"alertname": "HighRequestLatency", "job": "api", "instance": "api-1:9090", "severity": "critical",
               "team": "payments"},
    "annotations": {"summary": "High request latency on api-1", "description": "p99 latency is 2.3s (> 1s) for 10m"},
    "startsAt": "2027-01-15T08:00:00.123456789Z",
    "endsAt": "0001-01-01T00:00:00Z",
    "generatorURL": "http://prometheus:9090/graph?g0.expr=job%3Aapi_latency%3Ap99+%3E+1&g0.tab=1",
    "fingerprint": "c4a8b0d2e1f30a57",
}
DISK = {
    "status": "firing",
    "labels": {"alertname": "DiskFilling", "job": "node", "instance": "db-2:9100", "severity": "warning"},
    "annotations": {"summary": "Disk on db-2 will fill within 4h"},
    "startsAt": "2027-01-15T08:01:00Z",
    "endsAt": "0001-01-01T00:00:00Z",
    "generatorURL": "http://prometheus:9090/graph?g0.expr=predict_linear",
    "fingerprint": "9f1d2e3c4b5a6978",
}


def message(*alerts, status=None) -> dict:
    """A webhook message as Alertmanager posts it."""
    alerts = [copy.deepcopy(a) for a in alerts]
    return {
        "version": "4",
        "groupKey": '{}/{severity=~"critical|warning"}:{alertname="HighRequestLatency"}',
        "truncatedAlerts": 0,
        "status": status or ("firing" if any(a["status"] == "firing" for a in alerts) else "resolved"),
        "receiver": "uns",
        "groupLabels": {"alertname": alerts[0]["labels"].get("alertname", "") if alerts else ""},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": alerts,
    }


def resolved(alert: dict) -> dict:
    return {**copy.deepcopy(alert), "status": "resolved", "endsAt": "2027-01-15T08:30:00Z"}


@pytest.fixture
def am(api, api_rt):
    """A client authenticated as the Alertmanager principal (producer + responder)."""
    return api(groups=("producer", "responder"), name="alertmanager")


def post(client, body):
    return client.post(URL, body, format="json")


def test_one_notification_per_firing_alert(am):
    response = post(am, message(FIRING, DISK))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "success" and body["received"] == 2
    assert [(a["fingerprint"], a["result"]) for a in body["alerts"]] == [
        ("c4a8b0d2e1f30a57", "accepted"), ("9f1d2e3c4b5a6978", "accepted")]
    row = Notification.objects.get(id=body["alerts"][0]["notification_id"])
    n = row.notification
    assert row.principal == "alertmanager"
    assert n["source"] == "api/api-1:9090"
    assert n["title"] == "High request latency on api-1"
    assert n["body"] == "p99 latency is 2.3s (> 1s) for 10m"
    assert n["severity"] == "critical" and n["dedup_key"] == "c4a8b0d2e1f30a57" and n["require_ack"] is True
    meta = n["metadata"]["alertmanager"]
    assert meta["labels"]["team"] == "payments" and meta["receiver"] == "uns"
    assert meta["generatorURL"].startswith("http://prometheus:9090/") and meta["startsAt"] == FIRING["startsAt"]
    assert Notification.objects.get(id=body["alerts"][1]["notification_id"]).notification["severity"] == "warning"


def test_repeats_of_the_same_alert_are_duplicates(am):
    first = post(am, message(FIRING)).json()["alerts"][0]
    before = row_counts()
    again = post(am, message(FIRING)).json()["alerts"][0]
    assert again == {**first, "result": "duplicate"}
    changed = copy.deepcopy(FIRING)
    changed["annotations"]["description"] = "p99 latency is 2.9s (> 1s) for 15m"  # templated values move
    third = post(am, message(changed)).json()["alerts"][0]
    assert third["result"] == "duplicate" and third["notification_id"] == first["notification_id"]
    assert row_counts() == before


def test_a_new_firing_of_the_same_alert_coalesces_on_the_fingerprint(am):
    first = post(am, message(FIRING)).json()["alerts"][0]
    refired = {**FIRING, "startsAt": "2027-01-15T09:00:00Z"}
    second = post(am, message(refired)).json()["alerts"][0]
    assert second["result"] == "accepted" and second["notification_id"] != first["notification_id"]
    assert Notification.objects.get(id=second["notification_id"]).dedup_owner_id == first["notification_id"]


def test_resolved_alerts_acknowledge_the_open_notification(am, api_rt):
    nid = post(am, message(FIRING, DISK)).json()["alerts"][0]["notification_id"]
    api_rt.dispatch()
    response = post(am, message(resolved(FIRING)))
    assert response.status_code == 200, response.content
    entry = response.json()["alerts"][0]
    assert entry == {"fingerprint": FIRING["fingerprint"], "status": "resolved", "result": "resolved",
                     "settled": [nid], "before_delivery": [], "unsettled": [], "escalations_stopped": []}
    row = Notification.objects.get(id=nid)
    assert (row.ack_status, row.actor) == ("ACKED", "alertmanager")
    assert row.response_metadata == {"via": "alertmanager", "alert_status": "resolved", "endsAt": "2027-01-15T08:30:00Z"}
    disk = Notification.objects.get(notification__dedup_key=DISK["fingerprint"])
    assert disk.ack_status == "PENDING"  # only the resolved alert's notification is settled
    # Alertmanager re-sends resolved alerts: idempotent
    assert post(am, message(resolved(FIRING))).json()["alerts"][0]["settled"] == []


@pytest.fixture
def chained(settings, tmp_path):
    """Every notification escalates to ``lead`` then ``manager`` after its deadline."""
    import json

    from notifications.models import Channel
    from policies import bootstrap
    from policies.content import BOOTSTRAP_CONTENT

    def clear():
        for name in ("bootstrap_content", "load_bootstrap_file"):
            getattr(getattr(bootstrap, name, None), "cache_clear", lambda: None)()

    content = copy.deepcopy(BOOTSTRAP_CONTENT)
    content["defaults"]["escalation"] = {"levels": [{"channels": ["lead"], "wait_seconds": 60},
                                                    {"channels": ["manager"], "wait_seconds": 120}]}
    (tmp_path / "policy.json").write_text(json.dumps(content))
    settings.UNS_BOOTSTRAP_POLICY_FILE = str(tmp_path / "policy.json")
    clear()
    for name in ("lead", "manager"):
        Channel.objects.create(name=name, kind="console", config={})
    yield
    clear()


def test_a_resolved_alert_stops_the_chain_of_its_timed_out_notification(am, api_rt, clock, chained):
    """The notification timed out, so no ACK can settle it, but its chain pages on: the source's
    resolution stops the chain and closes the escalations it sent."""
    from notifications.models import Event

    nid = post(am, message(FIRING)).json()["alerts"][0]["notification_id"]
    api_rt.dispatch()
    clock.now = Notification.objects.get(id=nid).deadline
    api_rt.expire()  # TIMED_OUT, level 1 fires
    api_rt.dispatch()
    [fired] = Event.objects.filter(notification_id=nid, kind="ESCALATED")
    copy_id = fired.payload["escalation_id"]
    assert Notification.objects.get(id=copy_id).ack_status == "PENDING"
    clock.advance(10)
    entry = post(am, message(resolved(FIRING))).json()["alerts"][0]
    assert (entry["settled"], entry["unsettled"], entry["escalations_stopped"]) == ([], [], [nid])
    original = Notification.objects.get(id=nid)
    assert (original.ack_status, original.escalation_state) == ("TIMED_OUT", "RESPONDED")
    [stop] = Event.objects.filter(notification_id=nid, kind="ESCALATION_STOPPED")
    assert stop.payload["actor"] == "alertmanager" and stop.payload["responded_on"] == nid
    assert stop.payload["metadata"]["alert_status"] == "resolved"
    closed = Notification.objects.get(id=copy_id)
    assert (closed.ack_status, closed.actor) == ("ACKED", "alertmanager")
    assert closed.response_metadata == {"escalation_closed": "ESCALATION_STOPPED", "responded_on": nid,
                                        "escalated_from": nid}
    clock.advance(3600)
    api_rt.expire()
    assert Event.objects.filter(notification_id=nid, kind="ESCALATED").count() == 1  # level 2 never fired
    assert post(am, message(resolved(FIRING))).json()["alerts"][0]["escalations_stopped"] == []  # a repeat


def test_resolved_before_delivery_withholds_the_page(am, api_rt):
    nid = post(am, message(FIRING)).json()["alerts"][0]["notification_id"]
    entry = post(am, message(resolved(FIRING))).json()["alerts"][0]
    assert entry["settled"] == [] and entry["unsettled"] == []
    assert entry["before_delivery"] == [{"id": nid, "response": "ACKED", "resolved": True, "withheld": True}]
    assert api_rt.dispatch() == []
    row = Notification.objects.get(id=nid)
    assert (row.status, row.dead_letter, row.ack_status) == ("FAILED", False, None)
    assert "resolved by its source" in row.outcome["error_message"]


def test_mixed_batch(am, api_rt):
    post(am, message(FIRING))
    api_rt.dispatch()
    body = post(am, message(resolved(FIRING), DISK)).json()
    assert [a["result"] for a in body["alerts"]] == ["resolved", "accepted"]


def test_resolved_alerts_need_the_responder_capability(api, api_rt):
    producer = api(groups=("producer",), name="am-producer")
    assert post(producer, message(FIRING)).status_code == 200
    api_rt.dispatch()
    before = row_counts()
    assert_problem(post(producer, message(resolved(FIRING), DISK)), 403, "permission_denied")
    assert row_counts() == before  # not even the firing alert of that batch
    assert Notification.objects.get(principal="am-producer").ack_status == "PENDING"


@pytest.mark.parametrize("label, severity", [
    ("critical", "critical"), ("page", "critical"), ("error", "error"), ("warning", "warning"),
    ("WARNING", "warning"), ("info", "info"), ("none", "info"), ("something-else", "warning"), (None, "warning"),
])
def test_severity_from_labels(am, label, severity):
    alert = copy.deepcopy(FIRING)
    alert["labels"].pop("severity")
    if label is not None:
        alert["labels"]["severity"] = label
    nid = post(am, message(alert)).json()["alerts"][0]["notification_id"]
    assert Notification.objects.get(id=nid).notification["severity"] == severity


def test_fallbacks_for_source_and_title(am):
    bare = {"status": "firing", "labels": {"alertname": "Watchdog"}, "annotations": {},
            "startsAt": "2027-01-15T08:00:00Z", "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "",
            "fingerprint": "00aa11bb22cc33dd"}
    only_job = {**bare, "labels": {"alertname": "Down", "job": "node"}, "fingerprint": "ffee"}
    body = post(am, message(bare, only_job)).json()
    first = Notification.objects.get(id=body["alerts"][0]["notification_id"]).notification
    second = Notification.objects.get(id=body["alerts"][1]["notification_id"]).notification
    assert (first["source"], first["title"], first["body"]) == ("uns", "Watchdog", "")
    assert second["source"] == "node"


def test_long_annotations_are_clipped_not_refused(am):
    alert = copy.deepcopy(FIRING)
    alert["annotations"]["description"] = "d" * 30000
    nid = post(am, message(alert)).json()["alerts"][0]["notification_id"]
    n = Notification.objects.get(id=nid).notification
    assert len(n["body"]) == 20000 and n["body"].endswith("\u2026")
    meta = n["metadata"]["alertmanager"]
    assert meta["annotations_clipped"] is True and len(meta["annotations"]["description"]) == 1024
    assert meta["annotations"]["summary"] == FIRING["annotations"]["summary"]


def test_an_empty_batch_is_fine(am):
    assert post(am, message()).json() == {"status": "success", "received": 0, "alerts": []}


def _broken(path, value):
    body = message(FIRING, DISK)
    target = body
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


@pytest.mark.parametrize("body, field", [
    (_broken(["version"], "3"), "version"),
    (_broken(["version"], KeyError), "version"),
    (_broken(["alerts"], KeyError), "alerts"),
    (_broken(["alerts"], {"0": FIRING}), "alerts"),
    (_broken(["receiver"], 7), "receiver"),
    (_broken(["alerts", 1], "firing"), "alerts[1]"),
    (_broken(["alerts", 1, "status"], "pending"), "alerts[1].status"),
    (_broken(["alerts", 1, "fingerprint"], KeyError), "alerts[1].fingerprint"),
    (_broken(["alerts", 1, "fingerprint"], ""), "alerts[1].fingerprint"),
    (_broken(["alerts", 1, "fingerprint"], "f" * 256), "alerts[1].fingerprint"),
    (_broken(["alerts", 1, "labels"], KeyError), "alerts[1].labels"),
    (_broken(["alerts", 1, "labels"], {"severity": 3}), "alerts[1].labels"),
    (_broken(["alerts", 1, "annotations"], ["summary"]), "alerts[1].annotations"),
    (_broken(["alerts", 1, "startsAt"], "soon"), "alerts[1].startsAt"),
    (_broken(["alerts", 1, "startsAt"], KeyError), "alerts[1].startsAt"),
    (_broken(["alerts", 1, "endsAt"], 0), "alerts[1].endsAt"),
    (_broken(["alerts", 1, "labels", "huge"], "l" * 17000), "metadata"),
])
def test_a_bad_message_is_refused_whole(am, body, field):
    before = row_counts()
    problem = assert_problem(post(am, body), 400, "invalid_request")
    assert any(field in e["field"] for e in problem["errors"]), problem["errors"]
    assert row_counts() == before  # the good first alert was not accepted either


def test_bodies_that_are_not_a_message(am):
    assert_problem(am.post(URL, "[]", content_type="application/json"), 400, "invalid_request")
    assert_problem(am.post(URL, "{nope", content_type="application/json"), 400, "parse_error")


def test_credentials(api, client, make_principal, api_rt):
    from knox.models import AuthToken

    before = row_counts()
    assert_problem(client.post(URL, message(FIRING), content_type="application/json"), 401, "not_authenticated")
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    assert_problem(post(bad, message(FIRING)), 401, "authentication_failed")
    user, _ = make_principal("am-expired", ("producer", "responder"))
    _, expired = AuthToken.objects.create(user=user, expiry=timedelta(seconds=-5))
    stale = APIClient()
    stale.credentials(HTTP_AUTHORIZATION=f"Bearer {expired}")
    assert_problem(post(stale, message(FIRING)), 401, "authentication_failed")
    viewer = api(groups=("console",), name="am-viewer")
    assert_problem(post(viewer, message(FIRING)), 403, "permission_denied")
    assert row_counts() == before
