"""The /ui read models: what each screen shows, and their cursor pagination."""
import pytest

from notifications.models import Dedup, Notification

from uihelpers import populate

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(rt, clock, webhook, channel):
    return populate(rt, clock, webhook, n=3)


def test_overview_counts_dlq_and_last_hour(ui, world, clock):
    body = ui().get("/ui/overview").json()
    # Per i: doomed + failed leader (FAILED), successor (DELIVERED), inbox + acked (DELIVERED).
    assert body["counts_by_status"] == {"FAILED": 6, "DELIVERED": 9}
    assert body["failed"] == {"dead_lettered": 6, "not_dead_lettered": 0}
    assert body["counts_by_ack_status"] == {"NONE": 9, "PENDING": 3, "ACKED": 3}
    assert body["total"] == 15 and body["pending_acks"] == 3
    failed_at = clock.now - 2  # dispatched, then the clock moved twice
    assert body["dlq"] == {"depth": 6, "oldest_failed_at": failed_at, "oldest_failed_at_iso": body["dlq"]["oldest_failed_at_iso"],
                           "oldest_age_seconds": 2.0}
    assert body["dlq"]["oldest_failed_at_iso"].endswith("Z")
    assert body["last_hour"]["deliveries"] == 9 and body["last_hour"]["failures"] == 6
    clock.advance(3601)
    later = ui(name="later").get("/ui/overview").json()
    assert later["last_hour"] == {**later["last_hour"], "deliveries": 0, "failures": 0, "retries": 0}
    assert later["dlq"]["oldest_age_seconds"] == 3603.0


def test_overview_and_dlq_count_dead_letters_by_one_definition(ui, world, rt):
    """Resolved dead letters stay FAILED (reference 1.1) but leave the DLQ: the overview's
    FAILED splits by the DLQ's definition, so its dead-lettered count is the DLQ's own total."""
    doomed = list(Notification.objects.filter(status="FAILED", dead_letter=True).values_list("id", flat=True))
    for nid in doomed[:4]:
        rt.resolve_failure(nid, "olga")
    client = ui()
    body = client.get("/ui/overview").json()
    dlq = client.get("/ui/dlq").json()
    assert body["counts_by_status"]["FAILED"] == 6  # the reference's status is unchanged
    assert body["failed"] == {"dead_lettered": 2, "not_dead_lettered": 4}
    assert body["dlq"]["depth"] == 2 == dlq["total"] == len(dlq["items"])


def test_inbox_lists_pending_acks_oldest_deadline_first_with_cursor_pages(ui, world, rt, clock):
    # One more, delivered later: its deadline is later, so it comes last.
    clock.advance(60)
    late = rt.accept("svc", {"source": "web", "title": "late", "channels": ["console"], "require_ack": True}).notification.id
    rt.dispatch()
    expected = [*sorted(world["inbox"]), late]  # equal deadlines: id breaks the tie
    client = ui()
    first = client.get("/ui/inbox?limit=2").json()
    assert [i["id"] for i in first["items"]] == expected[:2]
    item = first["items"][0]
    assert item["ack_status"] == "PENDING" and item["deadline"] > clock.now and not item["overdue"]
    assert item["seconds_left"] == pytest.approx(item["deadline"] - clock.now)
    assert item["deadline_iso"].endswith("Z") and item["channels"] == ["console"]
    assert first["next"]
    second = client.get(f"/ui/inbox?limit=2&cursor={first['next']}").json()
    assert [i["id"] for i in second["items"]] == expected[2:]
    assert second["next"] is None
    rt.acknowledge(expected[0], "bob")
    assert [i["id"] for i in client.get("/ui/inbox").json()["items"]] == expected[1:]


def test_bad_limit_or_cursor_is_400(ui, world):
    client = ui()
    for query in ("limit=0", "limit=501", "limit=x", "cursor=not-ours", "cursor=WyJhIl0"):
        response = client.get(f"/ui/inbox?{query}")
        assert response.status_code == 400, query
        assert response["Content-Type"].startswith("application/problem+json")
    assert client.get("/ui/inbox?cursor=not-ours").json()["code"] == "invalid_cursor"


def test_notification_detail_of_a_dead_letter_explains_the_failure(ui, world):
    nid = world["dlq"][0]
    body = ui().get(f"/ui/notifications/{nid}").json()
    assert (body["status"], body["dead_letter"], body["title"]) == ("FAILED", True, "doomed 0")
    assert body["outcome"]["error_message"] == "ops-hook: HTTP 410 gone"
    assert body["request"]["title"] == "doomed 0" and "uns_resolution" not in body["request"]["metadata"]
    res = body["resolution"]
    assert res["revision"] >= 1 and res["policy_id"] and res["effective_hash"]
    assert res["rule"] is None and "defaults applied" in res["why"]
    [ch] = body["channels"]
    assert ch["channel"] == "ops-hook" and not ch["succeeded"]
    assert ch["last"]["error"] == "HTTP 410 gone" and ch["last"]["retryable"] is False
    assert body["dedup"] is None and body["replay_blocker"] is None
    kinds = [e["kind"] for e in body["timeline"]]
    assert kinds[0] == "ACCEPTED" and kinds[-1] == "DELIVERY_RESULT"
    assert body["timeline"][-1]["payload"]["dead_letter"] is True


def test_notification_detail_shows_the_rule_that_matched(ui, rt, channel):
    nid = rt.accept("svc", {"source": "db", "title": "disk", "severity": "critical"}).notification.id
    res = ui().get(f"/ui/notifications/{nid}").json()["resolution"]
    assert res["rule"] == "critical-needs-ack"
    assert "critical-needs-ack" in res["why"] and res["effective"]["require_ack"] is True


def test_dedup_group_shows_leader_followers_and_successor(ui, world):
    client = ui()
    leader_id, successor_id = world["leader"][0], world["successor"][0]
    leader = client.get(f"/ui/notifications/{leader_id}").json()
    group = leader["dedup"]
    assert group["role"] == "leader" and group["leader"]["id"] == leader_id
    assert group["successor"]["id"] == successor_id and group["successor"]["status"] == "DELIVERED"
    assert leader["replay_blocker"]["code"] == "replay_blocked"
    assert leader["replay_blocker"]["successor_id"] == successor_id
    successor = client.get(f"/ui/notifications/{successor_id}").json()
    kinds = [e["kind"] for e in successor["timeline"]]
    assert "DEDUP_LINKED" in kinds and "DEDUP_OWNER_PROMOTED" in kinds
    assert successor["dedup"]["leader"]["id"] == successor_id  # promoted: it leads now


def test_dedup_group_lists_pending_followers(ui, rt, clock, channel):
    lead = rt.accept("svc", {"source": "db", "title": "x", "channels": ["ops-hook"], "dedup_key": "same"}).notification
    follow = [rt.accept("svc", {"source": "db", "title": f"x{i}", "channels": ["ops-hook"], "dedup_key": "same"}).notification
              for i in range(2)]
    group = ui().get(f"/ui/notifications/{follow[0].id}").json()["dedup"]
    assert group["role"] == "follower" and group["leader"]["id"] == lead.id
    assert sorted(f["id"] for f in group["followers"]) == sorted(f.id for f in follow)
    assert all(f["role"] == "follower" for f in group["followers"])


def test_unknown_notification_is_404(ui, world):
    response = ui().get("/ui/notifications/nope")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_dlq_lists_reason_cycle_attempts_and_what_blocks_replay(ui, world, clock):
    client = ui()
    body = client.get("/ui/dlq").json()
    by_id = {i["id"]: i for i in body["items"]}
    assert set(by_id) == set(world["dlq"]) | set(world["leader"])
    doomed = by_id[world["dlq"][0]]
    assert doomed["error_message"] == "ops-hook: HTTP 410 gone" and doomed["channels_failed"] == ["ops-hook"]
    assert (doomed["cycle"], doomed["cycle_attempts"], doomed["attempts"]) == (1, 1, 1)
    assert doomed["max_attempts"] == 5
    assert doomed["failed_at"] == clock.now - 2 and doomed["failed_at_iso"].endswith("Z")
    assert doomed["replay_blocked"] is False and doomed["replay_blocker"] is None
    blocked = by_id[world["leader"][0]]
    assert blocked["replay_blocked"] is True
    assert blocked["replay_blocker"]["successor_id"] == world["successor"][0]
    assert blocked["replay_blocker"]["successor_status"] == "DELIVERED"
    assert "deliver it twice" in blocked["replay_blocker"]["explanation"]
    # Oldest accepted first by default (as GET /api/v1/dlq); oldest failure first on request.
    failed = [i["failed_at"] for i in client.get("/ui/dlq?sort=failed").json()["items"]]
    assert failed == sorted(failed)
    accepted = [i["accepted_at"] for i in body["items"]]
    assert accepted == sorted(accepted)


def test_dlq_blocker_agrees_with_replay(ui, world, rt):
    """What the DLQ says blocks replay is what replay refuses, and only that."""
    from core.errors import Conflict

    items = ui().get("/ui/dlq").json()["items"]
    for item in items:
        if item["replay_blocked"]:
            with pytest.raises(Conflict) as refused:
                rt.replay(item["id"], "olga")
            assert refused.value.code == item["replay_blocker"]["code"]
        else:
            assert rt.replay(item["id"], "olga").status == "PENDING"


def test_dlq_names_a_missing_successor_as_lineage_unknown(ui, world):
    Notification.objects.filter(id=world["successor"][0]).delete()
    Dedup.objects.all().delete()
    item = next(i for i in ui().get("/ui/dlq").json()["items"] if i["id"] == world["leader"][0])
    assert item["replay_blocker"]["code"] == "replay_lineage_unknown"


def test_dlq_filters_and_pages(ui, world):
    client = ui()
    assert {i["id"] for i in client.get("/ui/dlq?q=DOOMED").json()["items"]} == set(world["dlq"])
    assert {i["id"] for i in client.get("/ui/dlq?source=db").json()["items"]} == set(world["leader"])
    assert client.get("/ui/dlq?source=nothing").json()["items"] == []
    seen, cursor = [], None
    while True:
        page = client.get("/ui/dlq?limit=4" + (f"&cursor={cursor}" if cursor else "")).json()
        seen += [i["id"] for i in page["items"]]
        cursor = page["next"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 6


def test_policies_lists_versions_and_the_current_revision(ui, world):
    body = ui().get("/ui/policies").json()
    assert body["available"] is True
    assert body["current_revision"]["revision"] >= 1
    [policy] = [p for p in body["policies"] if p["active_version"]]
    active = next(v for v in policy["versions"] if v["status"] == "ACTIVE")
    assert active["content"]["schema_version"] == 1 and len(active["content_hash"]) == 64
    # the default policy's ACTIVE version cannot be retired (only replaced): Retire is not offered
    assert policy["policy_id"] == "uns-default" and active["transitions"] == ["clone"]
    assert body["revisions"] and body["transitions"]
    same = ui(name="diff").get(f"/ui/policies/{policy['policy_id']}/diff?from={active['version']}&to={active['version']}")
    assert same.status_code == 200 and same.json()["identical"] is True and same.json()["lines"] == []


def test_policy_diff_shows_changed_lines(ui, world):
    from policies import store

    body = ui().get("/ui/policies").json()
    policy = next(p for p in body["policies"] if p["active_version"])
    pid, v1 = policy["policy_id"], policy["active_version"]
    clone = store.clone(pid, v1, actor="alice")
    version = clone.version
    content = {**policy["versions"][0]["content"]}
    content["defaults"] = {**content["defaults"], "max_attempts": 9}
    store.edit_draft(pid, version, content, actor="alice")
    diff = ui(name="d2").get(f"/ui/policies/{pid}/diff?from={v1}&to={version}").json()
    assert diff["identical"] is False
    assert any(line.startswith("-") and '"max_attempts": 5' in line for line in diff["lines"])
    assert any(line.startswith("+") and '"max_attempts": 9' in line for line in diff["lines"])
    for bad in ("from=x&to=1", f"from={v1}"):
        assert ui(name=f"b{bad}").get(f"/ui/policies/{pid}/diff?{bad}").status_code == 400
    assert ui(name="nf").get(f"/ui/policies/{pid}/diff?from={v1}&to=99").status_code == 404
