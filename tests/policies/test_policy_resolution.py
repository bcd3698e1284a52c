"""Resolution for intake and for readers: cold init, the revision lock's SQL, one-SELECT reads,
frozen resolutions after later activations, and failing closed on missing or corrupt state."""
import json

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from core.errors import PolicyUnavailable
from notifications.adapters.base import DeliveryResult
from notifications.models import Event, Notification
from policies import bootstrap, resolution, store
from policies.content import DEFAULT_POLICY_ID
from policies.models import Policy, PolicyRevision, PolicySnapshot
from policyhelpers import content

pytestmark = pytest.mark.django_db

ON_POSTGRES = connection.vendor == "postgresql"


def req(**fields):
    return {"source": "svc", "title": "disk full", **fields}


def resolution_of(notification_id):
    return Notification.objects.get(id=notification_id).notification["metadata"]["uns_resolution"]


@pytest.fixture
def bootstrap_file(settings, tmp_path):
    """``bootstrap_file(text, suffix) -> path`` set as ``UNS_BOOTSTRAP_POLICY_FILE``."""
    def make(text, suffix=".json"):
        path = tmp_path / f"bootstrap{suffix}"
        path.write_text(text)
        settings.UNS_BOOTSTRAP_POLICY_FILE = str(path)
        bootstrap.load_bootstrap_file.cache_clear()
        return path

    yield make
    bootstrap.load_bootstrap_file.cache_clear()


def test_the_first_intake_bootstraps_revision_one(rt):
    assert not PolicyRevision.objects.exists()
    n = rt.accept("alice", req()).notification
    frozen = resolution_of(n.id)
    assert (frozen["policy_id"], frozen["policy_version"], frozen["revision"]) == (DEFAULT_POLICY_ID, 1, 1)
    assert frozen["snapshot_hash"] == PolicySnapshot.objects.get(revision=1).snapshot_hash
    assert PolicyRevision.objects.get().revision == 1


def test_bootstrap_from_a_json_policy_file(rt, bootstrap_file):
    bootstrap_file(json.dumps(content(max_attempts=2, delivery_mode="BEST_EFFORT")))
    n = rt.accept("alice", req()).notification
    assert resolution_of(n.id)["effective"]["max_attempts"] == 2
    assert resolution_of(n.id)["effective"]["delivery_mode"] == "BEST_EFFORT"


def test_bootstrap_from_a_yaml_policy_file(rt, bootstrap_file):
    import yaml

    bootstrap_file(yaml.safe_dump(content(max_attempts=4)), suffix=".yaml")
    n = rt.accept("alice", req()).notification
    assert resolution_of(n.id)["effective"]["max_attempts"] == 4


@pytest.mark.parametrize("text", ["{not json", json.dumps({"schema_version": 1})])
def test_an_unusable_bootstrap_file_fails_closed_and_writes_nothing(rt, bootstrap_file, text):
    bootstrap_file(text)
    with pytest.raises(PolicyUnavailable):
        rt.accept("alice", req())
    assert not PolicyRevision.objects.exists() and not Policy.objects.exists()
    assert not Notification.objects.exists() and not Event.objects.exists()


def test_the_bootstrap_file_is_ignored_once_a_revision_exists(rt, bootstrap_file):
    rt.accept("alice", req())
    bootstrap_file("{not json")
    n = rt.accept("alice", req()).notification
    assert resolution_of(n.id)["revision"] == 1


def test_intake_after_activation_resolves_the_new_revision_and_earlier_work_stays_frozen(rt, clock, channel, webhook):
    before = rt.accept("alice", req(channels=["ops-hook"])).notification
    frozen = resolution_of(before.id)
    draft = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=1, delivery_mode="BEST_EFFORT"), actor="a")
    store.activate(DEFAULT_POLICY_ID, draft.version, actor="a")
    after = rt.accept("alice", req(channels=["ops-hook"])).notification
    assert resolution_of(after.id)["revision"] == 2
    assert resolution_of(after.id)["effective"]["max_attempts"] == 1
    assert resolution_of(before.id) == frozen
    assert frozen["effective"]["max_attempts"] == 5
    # Retries of the earlier work still follow its frozen max_attempts and delivery mode.
    webhook.script.extend(DeliveryResult(False, retryable=True, error="HTTP 503") for _ in range(10))
    for _ in range(4):
        rt.dispatch()
        clock.advance(3600)
    row = Notification.objects.get(id=before.id)
    assert (row.status, row.cycle_attempts) == ("PENDING", 4)
    rt.dispatch()
    row.refresh_from_db()
    assert (row.status, row.dead_letter, row.cycle_attempts) == ("FAILED", True, 5)


def test_read_current_is_one_select_without_a_lock(rt):
    rt.accept("alice", req())
    with CaptureQueriesContext(connection) as queries:
        current = resolution.read_current()
    assert current.revision == 1
    assert len(queries) == 1
    sql = queries[0]["sql"].upper()
    assert "JOIN" in sql and "FOR " not in sql


def test_intake_takes_the_revision_row_for_share_on_postgresql(rt):
    store.ensure_initialized()
    with CaptureQueriesContext(connection) as queries:
        rt.accept("alice", req())
    locks = [q["sql"] for q in queries if "notification_policy_revisions" in q["sql"] and " FOR " in q["sql"].upper()]
    if ON_POSTGRES:
        assert len(locks) == 1 and "FOR SHARE" in locks[0].upper()
    else:
        assert locks == []  # SQLite: BEGIN IMMEDIATE serialises every writer already


def test_activation_takes_the_revision_row_for_update_on_postgresql():
    store.ensure_initialized()
    draft = store.create_draft("x", content(), actor="a")
    with CaptureQueriesContext(connection) as queries:
        store.activate("x", draft.version, actor="a")
    locks = [q["sql"].upper() for q in queries
             if "NOTIFICATION_POLICY_REVISIONS" in q["sql"].upper() and "FOR UPDATE" in q["sql"].upper()]
    assert len(locks) == (1 if ON_POSTGRES else 0)


def test_a_deleted_referenced_snapshot_makes_intake_fail_closed(rt):
    rt.accept("alice", req())
    PolicySnapshot.objects.filter(revision=1).delete()
    counts = (Notification.objects.count(), Event.objects.count(), PolicyRevision.objects.get().revision)
    with pytest.raises(PolicyUnavailable) as err:
        rt.accept("alice", req(title="after the loss"))
    assert err.value.code == "policy_snapshot_missing"
    assert err.value.status == 503
    assert (Notification.objects.count(), Event.objects.count(), PolicyRevision.objects.get().revision) == counts
    assert not PolicySnapshot.objects.exists(), "intake must not re-bootstrap over a lost snapshot"
    with pytest.raises(PolicyUnavailable):
        resolution.read_current()


def test_a_snapshot_that_fails_its_hash_fails_closed(rt):
    rt.accept("alice", req())
    snap = PolicySnapshot.objects.get(revision=1)
    tampered = json.loads(json.dumps(snap.snapshot))
    tampered["policies"][0]["content"]["defaults"]["max_attempts"] = 99
    PolicySnapshot.objects.filter(pk=snap.pk).update(snapshot=tampered)
    with pytest.raises(PolicyUnavailable) as err:
        rt.accept("alice", req(title="other"))
    assert err.value.code == "policy_snapshot_corrupt"


def test_a_snapshot_of_another_revision_fails_closed(rt):
    rt.accept("alice", req())
    PolicySnapshot.objects.filter(revision=1).update(revision=7)
    with pytest.raises(PolicyUnavailable) as err:
        rt.accept("alice", req(title="other"))
    assert err.value.code == "policy_snapshot_mismatch"


def test_missing_snapshot_is_a_503_problem_over_http(api, api_rt):
    client = api(groups=("producer",))
    assert client.post("/api/v1/notifications", req(), format="json").status_code == 202
    PolicySnapshot.objects.all().delete()
    response = client.post("/api/v1/notifications", req(title="x"), format="json")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "policy_snapshot_missing"


def test_readers_on_an_uninitialised_database_see_the_bootstrap_without_writing_it():
    current = resolution.current_or_bootstrap()
    assert (current.revision, current.snapshot_id) == (1, "")
    assert not PolicyRevision.objects.exists()


def test_intake_in_a_transaction_resolves_under_the_lock_even_when_called_directly():
    with transaction.atomic():
        res = resolution.resolve({"source": "s", "severity": "critical", "channels": [], "require_ack": False})
    assert (res.revision, res.rule, res.effective["require_ack"]) == (1, "critical-needs-ack", True)
    assert PolicyRevision.objects.get().revision == 1
