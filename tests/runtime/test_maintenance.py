"""Retention (``maintenance.maintain``, spec ``uns.maintenance``): default dry run, only terminal
work, satisfaction evidence kept together, bounded batches that resume, a verified archive."""
import gzip
import hashlib
import json
from datetime import datetime, timezone

import pytest

from notifications.models import (AckAuditRecord, Dedup, EarlyResponse, Event, InboxMessage, Notification,
                                  NotificationAuditRecord, SilenceHold)
from notifications.runtime import Conflict, InvalidRequest
from notifications.runtime import maintenance as m
from notifications.runtime.maintenance import DAY, maintain, parse_cutoff
from rthelpers import counts, fail, request, row
from pg_locks import waits_on_a_lock

pytestmark = pytest.mark.django_db

PERMANENT = fail(retryable=False, error="HTTP 404")


def run(rt, *, older_than=30, **kwargs):
    """``maintain`` with the cutoff ``older_than`` days before the fake clock's now."""
    kwargs.setdefault("operator", "oscar")
    return maintain(rt, cutoff=parse_cutoff(older_than, rt.clock()), **kwargs)


def send(rt, clock, **fields):
    nid = rt.accept("alice", request(**fields)).notification.id
    clock.advance(1)
    return nid


def receipts():
    return list(Event.objects.filter(kind="RETENTION_APPLIED").order_by("at", "id"))


def ids_left():
    return set(Notification.objects.values_list("id", flat=True))


def rows_of(nid):
    """Rows any table holds for one notification."""
    return {
        "events": Event.objects.filter(notification_id=nid).count(),
        "delivery_audit": NotificationAuditRecord.objects.filter(notification_id=nid).count(),
        "ack_audit": AckAuditRecord.objects.filter(notification_id=nid).count(),
        "inbox": InboxMessage.objects.filter(notification_id=nid).count(),
    }


@pytest.fixture
def world(rt, clock, webhook, channel):
    """One notification in each state, all accepted 100 days ago, and one fresh delivered one.

    Prunable: ``delivered``, ``acked``, ``best_effort`` (FAILED, resolved from the DLQ).
    Never: ``pending`` (backing off), ``dead`` (DLQ), ``awaiting`` (ack pending, deadline far),
    ``fresh`` (younger than the cutoff)."""
    ids = {}
    ids["delivered"] = send(rt, clock)
    rt.dispatch()
    ids["acked"] = send(rt, clock, require_ack=True)
    rt.dispatch()
    rt.acknowledge(ids["acked"], "bob")
    rt.deliver_callbacks()  # rt has no destination: the worker closes the outbox row unsent
    ids["best_effort"] = send(rt, clock)
    webhook.script.append(PERMANENT)
    rt.dispatch()
    rt.resolve_failure(ids["best_effort"], "oscar")
    ids["dead"] = send(rt, clock)
    webhook.script.append(PERMANENT)
    rt.dispatch()
    ids["awaiting"] = send(rt, clock, require_ack=True)
    rt.dispatch()
    Notification.objects.filter(id=ids["awaiting"]).update(deadline=clock.now + 365 * DAY)
    ids["pending"] = send(rt, clock)
    webhook.script.append(fail())
    rt.dispatch()
    assert row(ids["pending"]).status == "PENDING"
    Notification.objects.filter(id=ids["pending"]).update(next_attempt=clock.now + 365 * DAY)
    clock.advance(100 * DAY)
    ids["fresh"] = send(rt, clock)
    rt.dispatch()
    assert {k: row(v).status for k, v in ids.items()} == {
        "delivered": "DELIVERED", "acked": "DELIVERED", "best_effort": "FAILED", "dead": "FAILED",
        "awaiting": "DELIVERED", "pending": "PENDING", "fresh": "DELIVERED"}
    return ids


PRUNABLE = ("delivered", "acked", "best_effort")


def test_a_dry_run_counts_what_apply_deletes_and_writes_nothing(rt, world):
    expected = {
        "uns_notifications": 3,
        "uns_events": sum(rows_of(world[k])["events"] for k in PRUNABLE),
        "notification_audit_records": sum(rows_of(world[k])["delivery_audit"] for k in PRUNABLE),
        "ack_audit_records": 1,
        "uns_console_inbox": 0,
        "uns_dedup": 0,
    }
    before = counts()
    dry = run(rt)
    assert counts() == before and not receipts()
    assert dry.applied is False and dry.rows == expected and dry.eligible == 3
    assert dry.by_status == {"DELIVERED": 2, "FAILED": 1}
    assert dry.cutoff == rt.clock() - 30 * DAY

    applied = run(rt, apply=True)
    assert applied.rows == expected and applied.by_status == dry.by_status
    assert ids_left() == {world[k] for k in ("dead", "awaiting", "pending", "fresh")}
    for k in PRUNABLE:
        assert rows_of(world[k]) == {"events": 0, "delivery_audit": 0, "ack_audit": 0, "inbox": 0}
    for k in ("dead", "awaiting", "pending", "fresh"):
        assert rows_of(world[k])["events"] > 0  # untouched


def test_apply_writes_one_receipt_per_batch_with_the_catalog_payload(rt, world):
    report = run(rt, apply=True, batch_size=2)
    got = receipts()
    assert [e.id for e in got] == report.receipts and len(got) == 2  # 3 notifications in batches of 2
    assert sorted(i for e in got for i in e.payload["notification_ids"]) == sorted(world[k] for k in PRUNABLE)
    for e in got:
        assert e.notification_id == e.id and e.callback_pending is False
        assert set(e.payload) == {"operator", "cutoff", "deleted_rows", "notification_ids", "dedup_keys", "removed"}
        assert e.payload["operator"] == "oscar" and e.payload["cutoff"] == report.cutoff
        assert e.payload["removed"] is True and e.payload["dedup_keys"] == []
        assert set(e.payload["deleted_rows"]) == set(m.TABLES)
        assert e.payload["deleted_rows"]["uns_notifications"] == len(e.payload["notification_ids"])
    assert sum(e.payload["deleted_rows"]["uns_events"] for e in got) == report.rows["uns_events"]


def test_receipts_are_never_pruned_and_an_empty_apply_still_writes_one(rt, clock, world):
    run(rt, apply=True)
    first = {e.id for e in receipts()}
    clock.advance(400 * DAY)
    report = run(rt, apply=True, older_than=0)  # everything terminal is older than the cutoff now
    assert first <= {e.id for e in receipts()}
    again = run(rt, apply=True, older_than=0)
    assert again.rows == dict.fromkeys(m.TABLES, 0) and len(again.receipts) == 1
    [empty] = Event.objects.filter(id=again.receipts[0])
    assert empty.payload["notification_ids"] == [] and empty.payload["deleted_rows"]["uns_notifications"] == 0
    assert report.rows["uns_notifications"] == 1  # fresh; the dead letter, pending and awaiting rows stay
    assert ids_left() == {world[k] for k in ("dead", "awaiting", "pending")}


def test_an_interrupted_run_resumes_where_it_stopped(rt, clock, webhook, channel):
    sent = []
    for _ in range(5):
        sent.append(send(rt, clock))
        rt.dispatch()
    clock.advance(100 * DAY)
    first = run(rt, apply=True, batch_size=1, max_rows=2)
    assert first.stopped == "max_rows" and first.rows["uns_notifications"] == 2 and len(first.receipts) == 2
    assert ids_left() == set(sent[2:])  # oldest first
    stops = iter([False, True])
    second = run(rt, apply=True, batch_size=1, should_stop=lambda: next(stops))
    assert second.stopped == "interrupted" and second.rows["uns_notifications"] == 1
    assert ids_left() == set(sent[3:])
    last = run(rt, apply=True, batch_size=10)
    assert last.stopped is None and last.rows["uns_notifications"] == 2 and ids_left() == set()
    deleted = [i for e in receipts() for i in e.payload["notification_ids"]]
    assert sorted(deleted) == sorted(sent) and len(deleted) == len(set(deleted))


def chain(rt, clock, webhook, length):
    """``length`` notifications on one dedup key; each leader in turn fails permanently and
    hands its obligation to the next (as in test_replay_lineage). The last one is PENDING."""
    ids = [send(rt, clock, dedup_key="disk-full") for _ in range(length)]
    for failed, successor in zip(ids, ids[1:]):
        webhook.script.append(PERMANENT)
        rt.dispatch()
        assert row(failed).dedup_successor_id == successor and row(failed).dead_letter is True
    return ids


def test_replay_lineage_survives_pruning(rt, clock, webhook, channel):
    leader, f1, f2 = chain(rt, clock, webhook, 3)
    rt.dispatch()
    assert row(f2).status == "DELIVERED"  # satisfies the obligation leader and f1 handed off
    clock.advance(100 * DAY)
    report = run(rt, apply=True, older_than=30)
    # leader and f1 are dead letters (kept); f2 is the evidence that blocks their replay
    assert ids_left() == {leader, f1, f2} and report.rows["uns_notifications"] == 0
    assert report.kept_as_evidence == 1
    for nid in (leader, f1):
        with pytest.raises(Conflict) as err:
            rt.replay(nid, "oscar")
        assert err.value.code == "replay_blocked" and err.value.extra["successor_id"] == f2


def test_a_resolved_lineage_is_pruned_together(rt, clock, webhook, channel):
    leader, f1, f2 = chain(rt, clock, webhook, 3)
    rt.dispatch()
    for nid in (leader, f1):
        rt.resolve_failure(nid, "oscar")
    clock.advance(100 * DAY)
    report = run(rt, apply=True, batch_size=1)  # the chain spans three batches
    assert ids_left() == set() and report.rows["uns_notifications"] == 3 and report.kept_as_evidence == 0
    assert report.rows["uns_dedup"] == 1  # the window expired and its owner (f2) is gone


def test_the_leader_of_a_kept_follower_stays(rt, clock, webhook, channel):
    leader = send(rt, clock, dedup_key="flap")
    rt.dispatch()
    clock.advance(60)
    follower = send(rt, clock, dedup_key="flap")
    assert row(follower).status == "DEDUPLICATED" and row(follower).dedup_owner_id == leader
    key = row(leader).dedup_key
    clock.advance(100 * DAY)
    # the cutoff falls between the two: the follower is too young, so its leader stays with it
    cutoff = row(leader).notification["created_at"] + 30
    report = maintain(rt, cutoff=cutoff, apply=True, operator="oscar")
    assert ids_left() == {leader, follower} and report.kept_as_evidence == 1
    assert report.rows["uns_dedup"] == 0  # its owner is kept
    # both old enough: leader and follower go together, even one per batch
    report = run(rt, apply=True, batch_size=1)
    assert ids_left() == set() and report.rows["uns_notifications"] == 2 and report.rows["uns_dedup"] == 1
    assert [k for e in receipts() for k in e.payload["dedup_keys"]] == [key]


def test_a_run_stopped_early_does_not_report_waiting_leaders_as_kept(rt, clock, webhook, channel):
    leader = send(rt, clock, dedup_key="flap")
    rt.dispatch()
    follower = send(rt, clock, dedup_key="flap")
    clock.advance(100 * DAY)
    first = run(rt, apply=True, batch_size=1, max_rows=1)
    # the leader waited for its follower (a later batch); the budget ran out before its second chance
    assert first.stopped == "max_rows" and ids_left() == {leader} and first.kept_as_evidence == 0
    second = run(rt, apply=True)
    assert second.rows["uns_notifications"] == 1 and ids_left() == set()
    assert follower not in ids_left()


def test_the_owner_of_a_live_dedup_window_stays(rt, clock, webhook, channel):
    owner = send(rt, clock, dedup_key="nightly")
    rt.dispatch()
    clock.advance(100 * DAY)
    Dedup.objects.update(until=clock.now + DAY)  # a very long suppression window still running
    before = counts()
    report = run(rt, apply=True)
    assert ids_left() == {owner} and report.kept_as_evidence == 1
    assert counts()["notifications"] == before["notifications"] and Dedup.objects.count() == 1
    assert rt.accept("alice", request(dedup_key="nightly")).notification.status == "DEDUPLICATED"


def test_expired_windows_go_with_their_owner_and_are_named_in_the_receipt(rt, clock, webhook, channel):
    owner = send(rt, clock, dedup_key="gone-soon")
    rt.dispatch()
    key = row(owner).dedup_key
    clock.advance(100 * DAY)
    report = run(rt, apply=True)
    assert report.rows["uns_dedup"] == 1 and not Dedup.objects.filter(key=key).exists()
    assert key in [k for e in receipts() for k in e.payload["dedup_keys"]]
    # a new request with that key leads a new window
    assert rt.accept("alice", request(dedup_key="gone-soon")).notification.status == "PENDING"


def test_undelivered_callbacks_keep_their_notification(make_runtime, clock, webhook, channel):
    rt = make_runtime(callback=lambda body: None)
    waiting = send(rt, clock, require_ack=True)
    gave_up = send(rt, clock, require_ack=True)
    rt.dispatch()
    rt.acknowledge(waiting, "bob")
    rt.acknowledge(gave_up, "bob")
    Event.objects.filter(notification_id=gave_up, kind="ACKED").update(
        callback_pending=False, callback_attempts=3, callback_error="ConnectError: refused")
    clock.advance(100 * DAY)
    report = run(rt, apply=True)
    assert ids_left() == {waiting, gave_up} and report.eligible == 0
    rt.deliver_callbacks()
    run(rt, apply=True)
    assert ids_left() == {gave_up}  # delivered now: its notification may go


def test_a_callback_closed_unsent_for_want_of_a_destination_does_not_keep_its_notification(rt, clock, webhook,
                                                                                            channel):
    nid = send(rt, clock, require_ack=True)
    rt.dispatch()
    rt.acknowledge(nid, "bob")
    clock.advance(100 * DAY)
    assert run(rt).eligible == 0  # still in the outbox
    assert rt.deliver_callbacks()["skipped"] == 1
    run(rt, apply=True)
    assert nid not in ids_left()


def test_a_dry_run_agrees_with_apply_on_deferred_and_kept_rows(rt, clock, webhook, channel):
    leader = send(rt, clock, dedup_key="flap")
    rt.dispatch()
    for _ in range(3):
        send(rt, clock, dedup_key="flap")
    dead = chain(rt, clock, webhook, 2)[0]  # a dead letter whose successor is still pending
    rt.dispatch()
    assert row(dead).dead_letter and row(row(dead).dedup_successor_id).status == "DELIVERED"
    clock.advance(100 * DAY)
    dry = run(rt, batch_size=1)
    applied = run(rt, apply=True, batch_size=1)
    assert (dry.rows, dry.kept_as_evidence, dry.by_status) == \
           (applied.rows, applied.kept_as_evidence, applied.by_status)
    assert applied.rows["uns_notifications"] == 4 and applied.kept_as_evidence == 1
    assert leader not in ids_left() and dead in ids_left()


# --- the archive ------------------------------------------------------------------------------
def read_part(directory, name):
    with gzip.open(directory / name) as fh:
        return [json.loads(line) for line in fh]


def test_the_archive_holds_every_deleted_row_and_its_manifest_verifies(rt, world, tmp_path):
    target = tmp_path / "archive" / "2026-12-01"
    expected = {k: row(world[k]).notification for k in PRUNABLE}
    report = run(rt, apply=True, archive=target)
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["format"] == "uns-retention-archive/1" and len(manifest["parts"]) == 1 == report.parts
    assert manifest["counts"] == report.rows
    files = manifest["parts"][0]["files"]
    for table, entry in files.items():
        blob = (target / entry["file"]).read_bytes()
        assert hashlib.sha256(blob).hexdigest() == entry["sha256"] and len(blob) == entry["bytes"]
        assert len(read_part(target, entry["file"])) == entry["rows"] == report.rows[table]
    archived = {r["id"]: r for r in read_part(target, files["uns_notifications"]["file"])}
    assert {nid: r["notification"] for nid, r in archived.items()} == {world[k]: v for k, v in expected.items()}
    events = read_part(target, files["uns_events"]["file"])
    assert {e["notification_id"] for e in events} == set(archived) and all("payload" in e for e in events)
    [receipt] = receipts()
    assert set(receipt.payload) == {"operator", "cutoff", "deleted_rows", "notification_ids", "dedup_keys", "archive"}
    assert receipt.payload["archive"]["path"] == str(target) and receipt.payload["archive"]["verified"] is True
    assert receipt.payload["archive"]["files"] == files
    assert receipt.payload["archive"]["manifest_sha256"] == hashlib.sha256(
        (target / "manifest.json").read_bytes()).hexdigest()


def test_a_second_run_adds_parts_to_the_same_archive(rt, clock, webhook, channel, tmp_path):
    for _ in range(3):
        send(rt, clock)
        rt.dispatch()
    clock.advance(100 * DAY)
    run(rt, apply=True, archive=tmp_path, batch_size=2, max_rows=2)
    run(rt, apply=True, archive=tmp_path, batch_size=2)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [p["part"] for p in manifest["parts"]] == [1, 2] and manifest["counts"]["uns_notifications"] == 3
    archived = [r["id"] for p in manifest["parts"] for r in read_part(tmp_path, p["files"]["uns_notifications"]["file"])]
    assert len(set(archived)) == 3 and ids_left() == set()


def test_part_files_a_crashed_run_left_unlisted_are_never_overwritten(rt, world, tmp_path):
    stray = tmp_path / "part-00001-uns_events.jsonl.gz"
    stray.write_bytes(b"left by a run that crashed before its manifest")
    run(rt, apply=True, archive=tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [p["part"] for p in manifest["parts"]] == [2] and stray.read_bytes().startswith(b"left by")
    assert ids_left().isdisjoint(world[k] for k in PRUNABLE)


@pytest.mark.parametrize("corrupt", ["flip", "truncate", "rewrite"])
def test_a_failed_verification_deletes_nothing_and_says_why(rt, world, tmp_path, corrupt):
    def damage(files):
        path = files["uns_events"]
        blob = path.read_bytes()
        if corrupt == "flip":
            path.write_bytes(blob[:20] + bytes([blob[20] ^ 0xFF]) + blob[21:])
        elif corrupt == "truncate":
            path.write_bytes(blob[: len(blob) // 2])
        else:  # a well-formed file that lost a row
            lines = gzip.decompress(blob).splitlines(keepends=True)
            path.write_bytes(gzip.compress(b"".join(lines[1:]), mtime=0))

    before = counts()
    with pytest.raises(m.ArchiveVerificationFailed) as err:
        run(rt, apply=True, archive=tmp_path, after_write=damage)
    assert "part-00001-uns_events.jsonl.gz" in err.value.detail and "SHA-256" in err.value.detail
    after = counts()
    assert after == {**before, "events": before["events"] + 1}  # only the failure's receipt
    assert ids_left() >= {world[k] for k in PRUNABLE}
    [receipt] = receipts()
    assert receipt.payload["deleted_rows"] == dict.fromkeys(m.TABLES, 0) and receipt.payload["notification_ids"] == []
    assert receipt.payload["archive"]["verified"] is False and "SHA-256" in receipt.payload["archive"]["error"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]  # the unverified part is removed
    assert json.loads((tmp_path / "manifest.json").read_text())["parts"] == []
    # the next run (nothing corrupts it) archives and deletes as usual
    assert run(rt, apply=True, archive=tmp_path).rows["uns_notifications"] == 3


def test_verification_compares_the_rows_not_only_the_hash(rt, world, tmp_path, monkeypatch):
    # a reader that sees other rows than were written (the hash of the file still matches)
    real = m._verify_file

    def lying(path, entry, body, ids, table, part):
        return real(path, entry, body.replace(b'"oscar"', b'"mallory"'), ids, table, part)

    monkeypatch.setattr(m, "_verify_file", lying)
    before = counts()
    with pytest.raises(m.ArchiveVerificationFailed, match="differ from the rows in the database"):
        run(rt, apply=True, archive=tmp_path)
    assert counts()["notifications"] == before["notifications"]


def test_an_unusable_archive_path_is_refused_before_anything_is_deleted(rt, world, tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "manifest.json").write_text('{"format": "something else"}')
    before = counts()
    for path in (not_a_dir, tmp_path / "other"):
        with pytest.raises(m.ArchiveFailed):
            run(rt, apply=True, archive=path)
    assert counts() == before


def test_a_dry_run_with_an_archive_writes_nothing(rt, world, tmp_path):
    target = tmp_path / "never"
    report = run(rt, archive=target)
    assert report.archive == str(target) and not target.exists() and report.rows["uns_notifications"] == 3


# --- input ------------------------------------------------------------------------------------
NOW = 1_800_000_000.0


@pytest.mark.parametrize("value, cutoff", [
    ("90", NOW - 90 * DAY), ("0", NOW), ("1.5", NOW - 1.5 * DAY), (7, NOW - 7 * DAY),
    ("2026-09-01", datetime(2026, 9, 1, tzinfo=timezone.utc).timestamp()),
    ("2026-09-01T12:00:00+02:00", datetime(2026, 9, 1, 10, tzinfo=timezone.utc).timestamp()),
    ("2026-09-01T12:00:00Z", datetime(2026, 9, 1, 12, tzinfo=timezone.utc).timestamp()),
])
def test_older_than_takes_days_or_an_iso_date(value, cutoff):
    assert parse_cutoff(value, NOW) == pytest.approx(cutoff)


@pytest.mark.parametrize("value", ["abc", "", "-5", "90d", "nan", "2026-13-01", "2030-01-01", float("inf"), -1,
                                   "1000000", 1e11, "1969-12-31"])  # before the epoch
def test_bad_older_than_is_refused(value):
    with pytest.raises(InvalidRequest) as err:
        parse_cutoff(value, NOW)
    assert err.value.code == "invalid_older_than"


@pytest.mark.parametrize("kwargs, code", [
    ({"batch_size": 0}, "invalid_batch_size"), ({"batch_size": -1}, "invalid_batch_size"),
    ({"batch_size": 10_001}, "invalid_batch_size"), ({"max_rows": 0}, "invalid_max_rows"),
])
def test_bad_bounds_are_refused(rt, kwargs, code):
    with pytest.raises(InvalidRequest) as err:
        run(rt, apply=True, **kwargs)
    assert err.value.code == code and not receipts()


# --- PostgreSQL: a batch and an intake on the same window ---------------------------------------
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_intake_racing_the_batch_that_prunes_its_window_owner_waits_and_then_leads(
        make_runtime, clock, webhook, channel, tmp_path):
    import threading

    from django.db import connection, connections


    producer = make_runtime()
    owner = send(producer, clock, dedup_key="race")
    producer.dispatch()
    clock.advance(100 * DAY)
    # The window is live by the producer's clock and expired by the maintenance host's (10 s ahead):
    # without the window lock, intake would read the owner as DELIVERED and link to a pruned row.
    Dedup.objects.filter(key=row(owner).dedup_key).update(until=clock.now + 5)
    maintainer = make_runtime(clock=type(clock)(clock.now + 10))
    racer = {}

    def submit():
        try:
            connection.ensure_connection()
            racer["pid"] = connection.connection.info.backend_pid
            racer["connected"].set()
            racer["result"] = producer.accept("alice", request(dedup_key="race"))
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            racer["error"] = exc
        finally:
            racer["connected"].set()
            connections.close_all()

    def during_the_batch(files):  # inside the batch's transaction: the window row is locked
        racer["connected"] = threading.Event()
        racer["thread"] = threading.Thread(target=submit, daemon=True)
        racer["thread"].start()
        assert racer["connected"].wait(20) and "error" not in racer
        assert waits_on_a_lock(racer["pid"]), "intake must wait for the batch's window lock"

    report = maintain(maintainer, cutoff=maintainer.clock() - 30 * DAY, apply=True, operator="oscar",
                      archive=tmp_path, after_write=during_the_batch)
    racer["thread"].join(30)
    assert not racer["thread"].is_alive() and "error" not in racer
    assert report.rows["uns_notifications"] == 1 and owner not in ids_left()
    created = racer["result"].notification
    assert (created.status, created.dedup_owner_id) == ("PENDING", None)  # led; nothing points at the pruned row
    assert Dedup.objects.get(key=row(created.id).dedup_key).owner_id == created.id


def test_the_silences_bookkeeping_of_a_pruned_notification_goes_with_it(rt, world):
    """A pruned notification's silence holds and remembered early response are deleted with it
    (their story stays on the archived timeline); a kept notification's stay."""
    now = rt.clock()
    for key in ("delivered", "fresh"):
        SilenceHold.objects.create(silence_id="s-1", notification_id=world[key], scope="delivery", at=now)
        EarlyResponse.objects.create(notification_id=world[key], response="ACKED", actor="pd", at=now)
    run(rt, apply=True)
    assert set(SilenceHold.objects.values_list("notification_id", flat=True)) == {world["fresh"]}
    assert set(EarlyResponse.objects.values_list("notification_id", flat=True)) == {world["fresh"]}
