"""The live push seam: every ``uns_events`` row the runtime commits reaches ``Runtime.publish``
exactly once, after its transaction commits, and never when the transaction rolls back."""
import pytest
from django.db import transaction

from notifications.models import Channel, Event
from rthelpers import fail, request, row

pytestmark = pytest.mark.django_db


class Recorder:
    def __init__(self):
        self.batches = []

    def __call__(self, events):
        self.batches.append([e.id for e in events])

    @property
    def ids(self):
        return [i for batch in self.batches for i in batch]


@pytest.fixture
def published(make_runtime):
    recorder = Recorder()
    return recorder, make_runtime(publish=recorder)


def test_every_verb_publishes_each_committed_event_once(published, clock, webhook, channel, policy,
                                                        django_capture_on_commit_callbacks):
    recorder, rt = published
    policy(escalation={"target": "oncall"}, max_attempts=1)
    Channel.objects.create(name="oncall", kind="console", config={})
    with django_capture_on_commit_callbacks(execute=True):
        a = rt.accept("alice", request(require_ack=True)).notification          # accept
        rt.dispatch()                                                          # claim, attempt, settle
        rt.snooze(a.id, "bob", 600)                                             # snooze
        rt.escalate(a.id, "bob", "look")                                        # escalate (+ intake)
        b = rt.accept("alice", request(require_ack=True, title="b")).notification
        webhook.script.append(fail())
        rt.dispatch()                                                          # -> escalation + b
        b_row = row(b.id)
        assert b_row.dead_letter
        rt.replay(b.id, "op")                                                   # replay
        webhook.script.append(fail())
        rt.dispatch()
        rt.resolve_failure(b.id, "op")                                          # resolve
        clock.now = row(a.id).deadline
        rt.expire()                                                            # timeout + auto-escalation
        c = rt.accept("alice", request(require_ack=True, title="c")).notification
        rt.dispatch()
        rt.acknowledge(c.id, "bob")                                             # ack
    stored = list(Event.objects.order_by("at", "id").values_list("id", flat=True))
    kinds = set(Event.objects.values_list("kind", flat=True))
    assert {"ACCEPTED", "ATTEMPT_STARTED", "CHANNEL_ATTEMPT_STARTED", "CHANNEL_ATTEMPT_RESULT", "DELIVERY_RESULT",
            "SNOOZED", "ESCALATED", "REPLAY_REQUESTED", "FAILURE_RESOLVED", "TIMED_OUT", "ACKED"} <= kinds
    assert sorted(recorder.ids) == sorted(stored)
    assert len(recorder.ids) == len(set(recorder.ids))


def test_publish_runs_only_after_commit(published, channel, django_capture_on_commit_callbacks):
    recorder, rt = published
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        n = rt.accept("alice", request()).notification
    assert recorder.batches == []  # the transaction has not committed yet
    for callback in callbacks:
        callback()
    assert recorder.ids == [e.id for e in Event.objects.filter(notification_id=n.id)]


def test_rolled_back_events_are_never_published(published, channel, django_capture_on_commit_callbacks):
    recorder, rt = published
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError):
            with transaction.atomic():
                rt.accept("alice", request())
                raise RuntimeError("the caller's transaction fails after accept")
    assert recorder.batches == [] and Event.objects.count() == 0


def test_a_failing_publisher_never_fails_the_transition(make_runtime, channel, django_capture_on_commit_callbacks,
                                                        caplog):
    def broken(events):
        raise ConnectionError("layer down")

    rt = make_runtime(publish=broken)
    with django_capture_on_commit_callbacks(execute=True):
        n = rt.accept("alice", request()).notification
    assert Event.objects.filter(notification_id=n.id, kind="ACCEPTED").exists()
    assert "publishing 1 committed event(s) failed" in caplog.text


def test_publish_none_disables_the_live_push(make_runtime, channel, django_capture_on_commit_callbacks,
                                            monkeypatch):
    published = []
    monkeypatch.setattr("notifications.runtime.timeline._publish", lambda publish, events: published.append(events))
    rt = make_runtime(publish=None)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        rt.accept("alice", request())
    # The one on-commit hook left counts the metrics; nothing is published.
    assert len(callbacks) == 1
    assert published == []


def test_default_publisher_comes_from_settings(settings):
    from notifications import live
    from notifications.runtime import Runtime

    assert Runtime(callback=None).publish is live.channels_publisher()
    settings.UNS_EVENT_PUBLISHER = ""
    assert Runtime(callback=None).publish is None
