"""What the console offers is what the server would do, and what it shows before a risky act:
lifecycle verbs from ``policies.lifecycle.verbs`` (the rule ``store.retire`` enforces), Escalate
only when ``runtime.escalation.can_escalate`` says so (the chain-aware rule the verb enforces), and the activation preview (diff against
the ACTIVE version plus a simulation of recent requests)."""
import pytest

from notifications.runtime import Conflict
from policies import lifecycle, store
from policies.models import ACTIVE, DRAFT, RETIRED

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("policy_id, status, expected", [
    ("uns-default", ACTIVE, ["clone"]),
    ("uns-default", DRAFT, ["activate", "retire", "clone"]),
    ("team-x", ACTIVE, ["retire", "clone"]),
    ("team-x", DRAFT, ["activate", "retire", "clone"]),
    ("team-x", RETIRED, ["clone"]),
])
def test_offered_verbs_are_the_ones_the_server_carries_out(policy_id, status, expected):
    assert lifecycle.verbs(policy_id, status) == expected


def test_the_refused_retire_is_the_one_rule(rt, channel):
    rt.accept("svc", {"source": "s", "title": "t", "channels": ["ops-hook"]})  # initialises uns-default v1
    with pytest.raises(Conflict) as exc:
        store.retire("uns-default", 1, actor="pat")
    assert exc.value.code == "default_policy_required"
    assert exc.value.extra["policy_id"] == "uns-default"


def test_can_escalate_is_in_the_inbox_and_detail(ui, rt, clock, channel, settings, tmp_path):
    import json
    from copy import deepcopy

    from policies import bootstrap
    from policies.content import BOOTSTRAP_CONTENT

    content = deepcopy(BOOTSTRAP_CONTENT)
    content["rules"] = [{"name": "pager", "match": {"source": "pager"}, "set": {"escalation": {"target": "ops-hook"}}}]
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(content))
    settings.UNS_BOOTSTRAP_POLICY_FILE = str(path)
    for name in ("bootstrap_content", "load_bootstrap_file"):
        getattr(getattr(bootstrap, name, None), "cache_clear", lambda: None)()
    with_target = rt.accept("svc", {"source": "pager", "title": "a", "channels": ["ops-hook"],
                                    "require_ack": True}).notification.id
    without = rt.accept("svc", {"source": "web", "title": "b", "channels": ["ops-hook"],
                                "require_ack": True}).notification.id
    clock.advance(1)
    rt.dispatch()
    client = ui()
    items = {i["id"]: i for i in client.get("/ui/inbox").json()["items"]}
    assert items[with_target]["can_escalate"] is True
    assert items[without]["can_escalate"] is False
    detail = client.get(f"/ui/notifications/{with_target}").json()
    assert detail["escalation"]["can_escalate"] is True and detail["escalation"]["state"] is None
    assert [lv["channels"] for lv in detail["escalation"]["levels"]] == [["ops-hook"]]
    assert client.get(f"/ui/notifications/{without}").json()["escalation"] is None
    rt.escalate(with_target, "bob", reason="no answer")  # the verb agrees with what was offered
    fired = client.get(f"/ui/notifications/{with_target}").json()["escalation"]["fired"]
    assert [(f["level"], f["channels"], f["actor"]) for f in fired] == [(1, ["ops-hook"], "bob")]
    for name in ("bootstrap_content", "load_bootstrap_file"):
        getattr(getattr(bootstrap, name, None), "cache_clear", lambda: None)()


def test_activation_preview_diffs_against_the_active_version_and_simulates(ui, rt, clock, channel):
    for source, severity in (("billing", "info"), ("db", "critical"), ("db", "critical")):
        rt.accept("svc", {"source": source, "title": "x", "severity": severity, "channels": ["ops-hook"]})
    active = store.clone("uns-default", 1, actor="pat")
    content = dict(active_content := store._verified(store._get_content("uns-default", active.version)))
    content["rules"] = [{"name": "db-critical", "match": {"source": "db"}, "set": {"max_attempts": 2}},
                        *active_content.get("rules", [])]
    store.edit_draft("uns-default", active.version, content, actor="pat")
    client = ui()
    body = client.get(f"/ui/policies/uns-default/versions/{active.version}/activation-preview").json()
    assert (body["active_version"], body["version"]) == (1, active.version)
    assert any('"db-critical"' in line and line.startswith("+") for line in body["diff"]["lines"])
    samples = body["simulation"]["samples"]
    assert len(samples) == 2  # the two distinct recent requests
    by_source = {s["request"]["source"]: s for s in samples}
    assert by_source["db"]["changed"] is True and by_source["db"]["after"]["rule"] == "db-critical"
    assert by_source["db"]["after"]["effective"]["max_attempts"] == 2
    assert by_source["billing"]["changed"] is False
    assert by_source["billing"]["after"]["policy_version"] == active.version
    assert body["simulation"]["changed"] == 1
    # nothing was activated
    assert client.get("/ui/policies").json()["policies"][0]["active_version"] == 1
    assert client.get("/ui/policies/uns-default/versions/99/activation-preview").status_code == 404
    assert client.get("/ui/policies/uns-default/versions/zero/activation-preview").status_code == 400
