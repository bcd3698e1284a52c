"""A chain that stops or runs out closes its escalation notifications (the per-level copies,
"ESCALATED: ..."): each copy still awaiting a response takes the chain's outcome as its own
acknowledgement (ACKED / DISMISSED by the responder who stopped it, TIMED_OUT by
``uns-timeout-worker`` when the chain ran out), with ``{"escalation_closed": <the original's
event kind>, "escalated_from", "responded_on"}`` as metadata on its event and ack audit row, in
the transaction of the response or of the chain's end, and leaves the inbox. Runs on SQLite and
on PostgreSQL (``DATABASE_URL``); the race of two levels answered at once is in
tests/concurrency/test_concurrent_escalation_copies.py."""
import pytest

from core.errors import InvalidRequest
from notifications.models import AckAuditRecord, Channel
from notifications.runtime import Conflict, lists
from rthelpers import counts, only_event, request, row, timeline

pytestmark = pytest.mark.django_db

CHAIN = {"levels": [
    {"channels": ["lead"], "wait_seconds": 60},
    {"channels": ["manager"], "wait_seconds": 120},
    {"channels": ["director"], "wait_seconds": 300},
]}


@pytest.fixture
def levels(db):
    for name in ("lead", "manager", "director"):
        Channel.objects.create(name=name, kind="console", config={})


@pytest.fixture
def chained(policy, levels):
    return policy(escalation=CHAIN)


@pytest.fixture
def slow_chain(policy, levels):
    """Levels that wait longer than a copy's own acknowledgement deadline."""
    return policy(escalation={"levels": [{**lv, "wait_seconds": 7200} for lv in CHAIN["levels"]]})


def inbox_ids():
    return set(lists.inbox().values_list("id", flat=True))


def copies(nid):
    """The escalation notification ids of ``nid``'s chain, level order."""
    return [e.payload["escalation_id"] for e in timeline(nid, "ESCALATED")]


def two_levels_out(rt, clock):
    """A timed-out notification whose chain fired levels 1 and 2, both delivered (awaiting a
    response in the inbox). Returns ``(original id, [level 1 copy, level 2 copy])``."""
    nid = rt.accept("alice", request(require_ack=True, title="Replica lag 300 s")).notification.id
    clock.advance(5)
    rt.dispatch()
    clock.now = row(nid).deadline
    rt.expire()
    clock.advance(60)
    rt.expire()
    rt.dispatch()
    out = copies(nid)
    assert len(out) == 2 and set(out) <= inbox_ids()
    assert [row(c).notification["title"] for c in out] == ["ESCALATED: Replica lag 300 s"] * 2
    return nid, out


@pytest.mark.parametrize("answered", [0, 1])
@pytest.mark.parametrize("dismiss", [False, True])
def test_a_response_at_any_level_closes_the_other_copies(rt, clock, channel, chained, answered, dismiss):
    nid, out = two_levels_out(rt, clock)
    clock.advance(7)
    rt.acknowledge(out[answered], "bob", dismiss=dismiss)
    state = "DISMISSED" if dismiss else "ACKED"
    other = out[1 - answered]
    closed = row(other)
    metadata = {"escalation_closed": "ESCALATION_STOPPED", "responded_on": out[answered], "escalated_from": nid}
    assert (closed.ack_status, closed.actor, closed.responded_at) == (state, "bob", clock.now)
    assert closed.response_metadata == metadata
    event = only_event(other, state)
    assert event.payload == {"actor": "bob", "metadata": metadata} and event.at == clock.now
    [audit] = AckAuditRecord.objects.filter(notification_id=other)
    assert (audit.old_status, audit.new_status, audit.acked_by, audit.ack_metadata) == ("PENDING", state, "bob", metadata)
    assert not (set(out) & inbox_ids())
    # the copy answered keeps its own response; the chain stopped once, on the original
    assert row(out[answered]).response_metadata == {} and row(nid).escalation_state == "RESPONDED"
    assert only_event(nid, "ESCALATION_STOPPED").payload["responded_on"] == out[answered]


def test_a_closed_copy_answers_its_closer_idempotently_and_refuses_another(rt, clock, channel, chained):
    nid, (first, second) = two_levels_out(rt, clock)
    rt.acknowledge(second, "bob")
    assert rt.acknowledge(first, "bob").ack_status == "ACKED"  # bob's own repeat: the stored row
    assert len(timeline(first, "ACKED")) == 1
    with pytest.raises(Conflict) as refused:
        rt.acknowledge(first, "carol")
    assert refused.value.code == "ack_conflict"
    with pytest.raises(Conflict):
        rt.acknowledge(first, "bob", dismiss=True)
    assert row(first).response_metadata["escalation_closed"] == "ESCALATION_STOPPED"


def test_a_copy_settled_before_the_stop_keeps_its_own_outcome(rt, clock, channel, slow_chain):
    nid = rt.accept("alice", request(require_ack=True)).notification.id
    clock.advance(5)
    rt.dispatch()
    clock.now = row(nid).deadline
    rt.expire()
    rt.dispatch()
    clock.advance(60)
    rt.escalate(nid, "bob", "the manager too")
    rt.dispatch()
    first, second = copies(nid)
    clock.now = row(first).deadline  # level 1's copy times out on its own deadline, the chain waits on
    rt.expire()
    assert row(first).ack_status == "TIMED_OUT" and row(nid).escalation_state == "ACTIVE"
    rt.acknowledge(second, "bob")
    assert row(first).ack_status == "TIMED_OUT" and row(first).actor == "uns-timeout-worker"
    assert timeline(first, "ACKED") == []


def test_a_response_on_the_original_closes_the_copies_of_a_chain_started_by_hand(rt, clock, channel, chained):
    nid = rt.accept("alice", request(require_ack=True)).notification.id
    clock.advance(5)
    rt.dispatch()
    rt.escalate(nid, "bob", "paging the lead now")
    rt.escalate(nid, "bob", "and the manager")
    rt.dispatch()
    out = copies(nid)
    assert set(out) <= inbox_ids() and nid in inbox_ids()
    rt.acknowledge(nid, "carol")
    assert [(row(c).ack_status, row(c).actor) for c in out] == [("ACKED", "carol")] * 2
    assert all(row(c).response_metadata["responded_on"] == nid for c in out)
    assert not ({nid, *out} & inbox_ids())


def test_a_stop_closes_the_copies_of_a_copy_escalated_by_hand(rt, clock, channel, chained):
    nid, (first, second) = two_levels_out(rt, clock)
    rt.escalate(second, "bob", "the manager's page needs the director")  # a chain of the copy
    rt.dispatch()
    [nested] = copies(second)
    assert row(second).escalation_state == "ACTIVE" and nested in inbox_ids()
    rt.acknowledge(first, "carol")
    assert row(second).ack_status == "ACKED" and row(second).escalation_state == "RESPONDED"
    assert row(nested).ack_status == "ACKED" and row(nested).response_metadata["escalated_from"] == second
    assert only_event(second, "ESCALATION_STOPPED").payload["responded_on"] == first
    assert not ({first, second, nested} & inbox_ids())


def test_a_chain_that_runs_out_times_its_open_copies_out(rt, clock, channel, chained):
    nid, (first, second) = two_levels_out(rt, clock)
    start = row(nid).escalation_due - 120  # when level 2 fired
    clock.now = start + 120
    rt.expire()  # level 3
    rt.dispatch()
    third = copies(nid)[2]
    clock.now = start + 120 + 299
    rt.expire()
    assert row(third).ack_status == "PENDING"  # the chain has not run out yet
    clock.now = start + 120 + 300
    rt.expire()
    assert row(nid).escalation_state == "EXHAUSTED"
    for c in (first, second, third):
        r = row(c)
        assert (r.ack_status, r.actor) == ("TIMED_OUT", "uns-timeout-worker")
        assert r.response_metadata == {"escalation_closed": "ESCALATION_EXHAUSTED", "escalated_from": nid}
        assert only_event(c, "TIMED_OUT").payload["metadata"] == r.response_metadata
    assert not ({first, second, third} & inbox_ids())


def test_closing_copies_writes_callback_rows_like_any_response(rt, clock, channel, chained):
    nid, (first, second) = two_levels_out(rt, clock)
    rt.acknowledge(second, "bob")
    assert only_event(first, "ACKED").callback_pending is True


def test_a_resolved_source_stops_a_timed_out_chain_and_nothing_else(rt, clock, channel, chained):
    nid, (first, second) = two_levels_out(rt, clock)
    pending = rt.accept("alice", request(require_ack=True, title="other")).notification.id
    rt.dispatch()
    before = counts()
    assert rt.stop_escalation(pending, "alertmanager") is False  # awaiting a response: no chain to stop
    with pytest.raises(InvalidRequest):
        rt.stop_escalation(nid, "alertmanager", metadata=["not", "an", "object"])
    assert counts() == before
    assert rt.stop_escalation(nid, "pagerduty", dismiss=True, metadata={"via": "pagerduty"}) is True
    assert [(row(c).ack_status, row(c).actor) for c in (first, second)] == [("DISMISSED", "pagerduty")] * 2
    assert row(nid).ack_status == "TIMED_OUT" and row(nid).escalation_state == "RESPONDED"
    assert only_event(nid, "ESCALATION_STOPPED").payload["metadata"] == {"via": "pagerduty"}
    assert rt.stop_escalation(nid, "pagerduty", dismiss=True) is False  # once
