"""The state machines as data (reference 1.1 and 1.2), ``settle()`` and ``backoff_seconds()``.
Pure: no database."""
import itertools

import pytest

from core.transitions import (
    ACK_TRANSITIONS,
    STATUS_TRANSITIONS,
    IllegalTransition,
    Settlement,
    backoff_seconds,
    check_ack,
    SELF_EDGES,
    check,
    check_status,
    initial,
    retry_delay_seconds,
    settle,
    sql_guard,
    transition,
)

STATUSES = ["PENDING", "DELIVERED", "FAILED", "DEDUPLICATED"]
ACK_STATES = [None, "PENDING", "ACKED", "DISMISSED", "TIMED_OUT"]

# Reference 1.1 projected onto uns_notifications.status:
#   PENDING_LEADER/FOLLOWER -> PENDING (retry, lease change, promotion, relink),
#   -> DELIVERED, -> FAILED (best effort or DLQ), follower -> DEDUPLICATED;
#   FAILED_DLQ -> PENDING (replay), FAILED_DLQ -> FAILED (resolve).
ALLOWED_STATUS = {
    ("PENDING", "PENDING"), ("PENDING", "DELIVERED"), ("PENDING", "FAILED"), ("PENDING", "DEDUPLICATED"),
    ("FAILED", "PENDING"), ("FAILED", "FAILED"),
    (None, "PENDING"), (None, "DEDUPLICATED"),  # intake's INSERT
}
# Reference 1.2.
ALLOWED_ACK = {
    (None, "PENDING"),
    ("PENDING", "ACKED"), ("PENDING", "DISMISSED"), ("PENDING", "TIMED_OUT"),
    ("PENDING", "PENDING"),  # snooze
}
# Self-edges and the names that may write them.
NAMED_SELF_EDGES = {
    ("status", "PENDING"): {"retry", "lease", "promote", "relink", "hold"},
    ("status", "FAILED"): {"resolve"},
    ("ack_status", "PENDING"): {"snooze", "hold"},
}


def test_status_table_is_exactly_the_reference_diagram():
    edges = {(old, new) for old, targets in STATUS_TRANSITIONS.items() for new in targets}
    assert edges == ALLOWED_STATUS
    assert set(STATUS_TRANSITIONS) == {None, *STATUSES}


def test_ack_table_is_exactly_the_reference_diagram():
    edges = {(old, new) for old, targets in ACK_TRANSITIONS.items() for new in targets}
    assert edges == ALLOWED_ACK
    assert set(ACK_TRANSITIONS) == set(ACK_STATES)


@pytest.mark.parametrize("old,new", list(itertools.product([None, *STATUSES], STATUSES)))
def test_check_status_accepts_only_reference_edges(old, new):
    if (old, new) in ALLOWED_STATUS:
        check_status(old, new)
    else:
        with pytest.raises(IllegalTransition):
            check_status(old, new)


@pytest.mark.parametrize("old,new", list(itertools.product(ACK_STATES, ACK_STATES[1:])))
def test_check_ack_accepts_only_reference_edges(old, new):
    if (old, new) in ALLOWED_ACK:
        check_ack(old, new, edge="snooze" if old == new else None)
    else:
        with pytest.raises(IllegalTransition):
            check_ack(old, new)


def test_check_status_rejects_unknown_states():
    with pytest.raises(IllegalTransition):
        check_status("LEASED", "DELIVERED")


@pytest.mark.parametrize("mode", ["GUARANTEED", "BEST_EFFORT"])
def test_settle_all_channels_succeeded_is_delivered(mode):
    assert settle(delivery_mode=mode, all_succeeded=True, permanent_failure=False, cycle_attempts=5,
                  max_attempts=5) == Settlement("DELIVERED", False, False)


@pytest.mark.parametrize("mode", ["GUARANTEED", "BEST_EFFORT"])
def test_settle_transient_failure_with_budget_left_retries(mode):
    assert settle(delivery_mode=mode, all_succeeded=False, permanent_failure=False, cycle_attempts=4,
                  max_attempts=5) == Settlement("PENDING", False, True)


def test_settle_guaranteed_exhausted_is_dead_lettered():
    assert settle(delivery_mode="GUARANTEED", all_succeeded=False, permanent_failure=False, cycle_attempts=5,
                  max_attempts=5) == Settlement("FAILED", True, False)


def test_settle_best_effort_exhausted_fails_without_dead_letter():
    assert settle(delivery_mode="BEST_EFFORT", all_succeeded=False, permanent_failure=False, cycle_attempts=5,
                  max_attempts=5) == Settlement("FAILED", False, False)


@pytest.mark.parametrize("mode,dead_letter", [("GUARANTEED", True), ("BEST_EFFORT", False)])
def test_settle_permanent_failure_never_retries(mode, dead_letter):
    assert settle(delivery_mode=mode, all_succeeded=False, permanent_failure=True, cycle_attempts=1,
                  max_attempts=5) == Settlement("FAILED", dead_letter, False)


def test_settle_attempts_beyond_budget_still_fail():
    # A row replayed under a policy with a smaller budget must not retry forever.
    assert settle(delivery_mode="GUARANTEED", all_succeeded=False, permanent_failure=False, cycle_attempts=9,
                  max_attempts=3).status == "FAILED"


BACKOFF = dict(base=2.0, factor=2.0, cap=300.0, jitter=0.2)


def test_backoff_grows_exponentially_at_the_jitter_midpoint():
    delays = [backoff_seconds(cycle_attempt=n, unit_random=0.5, **BACKOFF) for n in range(1, 6)]
    assert delays == [2.0, 4.0, 8.0, 16.0, 32.0]


def test_backoff_is_capped():
    assert backoff_seconds(cycle_attempt=9, unit_random=0.5, **BACKOFF) == 300.0
    assert backoff_seconds(cycle_attempt=60, unit_random=0.5, **BACKOFF) == 300.0


def test_backoff_jitter_spreads_symmetrically_around_the_raw_delay():
    low = backoff_seconds(cycle_attempt=3, unit_random=0.0, **BACKOFF)
    high = backoff_seconds(cycle_attempt=3, unit_random=0.999999, **BACKOFF)
    assert low == pytest.approx(8.0 * 0.8)
    assert high == pytest.approx(8.0 * 1.2, rel=1e-5)
    # the cap bounds the raw delay; jitter spreads around the capped value
    assert backoff_seconds(cycle_attempt=20, unit_random=0.0, **BACKOFF) == pytest.approx(240.0)


def test_backoff_first_attempt_is_base_and_never_negative():
    assert backoff_seconds(cycle_attempt=0, unit_random=0.5, **BACKOFF) == 2.0
    assert backoff_seconds(cycle_attempt=1, base=5.0, factor=3.0, cap=100.0, jitter=1.0, unit_random=0.0) == 0.0
    assert backoff_seconds(cycle_attempt=1, base=5.0, factor=3.0, cap=100.0, jitter=0.0, unit_random=0.9) == 5.0


@pytest.mark.parametrize("backoff,retry_after,cap,delay", [
    (2.0, None, 3600.0, 2.0),       # the provider did not say: the backoff
    (2.0, 60.0, 3600.0, 60.0),      # it asked for more: no earlier than it asked
    (16.0, 5.0, 3600.0, 16.0),      # it asked for less: never faster than the backoff
    (2.0, 86400.0, 3600.0, 3600.0),  # capped
    (7200.0, 86400.0, 3600.0, 7200.0),  # the cap never shortens the backoff
    (2.0, 0.0, 3600.0, 2.0),
])
def test_retry_delay_is_the_longer_of_backoff_and_the_capped_retry_after(backoff, retry_after, cap, delay):
    assert retry_delay_seconds(backoff=backoff, retry_after=retry_after, retry_after_max=cap) == delay


def test_self_edges_are_exactly_the_named_ones():
    assert {k: set(v) for k, v in SELF_EDGES.items()} == NAMED_SELF_EDGES


def test_snooze_and_a_silence_hold_are_the_only_ack_self_edge_names():
    check_ack("PENDING", "PENDING", edge="snooze")
    check_ack("PENDING", "PENDING", edge="hold")
    for name in (None, "retry", "resolve", "lease"):
        with pytest.raises(IllegalTransition):
            check_ack("PENDING", "PENDING", edge=name)


@pytest.mark.parametrize("field,old", sorted(NAMED_SELF_EDGES, key=str))
def test_check_refuses_a_self_edge_under_another_name(field, old):
    names = NAMED_SELF_EDGES[(field, old)]
    for name in sorted(names):
        check(field, old, old, edge=name)
    for name in sorted({"retry", "lease", "promote", "relink", "resolve", "snooze", "hold", None} - names, key=str):
        with pytest.raises(IllegalTransition):
            check(field, old, old, edge=name)


def test_initial_allows_only_the_insert_edges():
    assert initial(status="PENDING") == {"status": "PENDING", "ack_status": None}
    assert initial(status="DEDUPLICATED")["status"] == "DEDUPLICATED"
    for status in ("DELIVERED", "FAILED"):
        with pytest.raises(IllegalTransition):
            initial(status=status)
    for ack in ("ACKED", "DISMISSED", "TIMED_OUT"):
        with pytest.raises(IllegalTransition):
            initial(status="PENDING", ack_status=ack)


# Every edge the tables lack, generated from the states: the helper refuses each before any query.
_ALL_NAMES = [None, "retry", "lease", "promote", "relink", "resolve", "snooze", "hold"]
LACKING = (
    [("status", old, new) for old, new in itertools.product([None, *STATUSES], STATUSES)
     if (old, new) not in ALLOWED_STATUS]
    + [("ack_status", old, new) for old, new in itertools.product(ACK_STATES, ACK_STATES)
       if (old, new) not in ALLOWED_ACK]
)


@pytest.mark.django_db
@pytest.mark.parametrize("field,old,new", LACKING)
def test_transition_refuses_every_edge_the_table_lacks_without_a_query(field, old, new, django_assert_num_queries):
    from notifications.models import Notification

    for name in _ALL_NAMES:
        with django_assert_num_queries(0), pytest.raises(IllegalTransition):
            transition(Notification, **{field: (old, new)}, edge=name, where={"id": "x"})
        # Hidden among allowed prior states, the lacking one still refuses the whole write.
        olds = tuple({o for o, n in (ALLOWED_STATUS if field == "status" else ALLOWED_ACK) if n == new and o}
                     | ({old} if old else set()))
        if old is not None and len(olds) > 1:
            with django_assert_num_queries(0), pytest.raises(IllegalTransition):
                transition(Notification.objects.filter(id="x"), **{field: (olds, new)}, edge=name)


@pytest.mark.django_db
@pytest.mark.parametrize("field,old", sorted(NAMED_SELF_EDGES, key=str))
def test_transition_refuses_an_unnamed_self_edge_without_a_query(field, old, django_assert_num_queries):
    from notifications.models import Notification

    with django_assert_num_queries(0), pytest.raises(IllegalTransition):
        transition(Notification, **{field: (old, old)})


@pytest.mark.django_db
@pytest.mark.parametrize("kwargs", [
    {},
    {"status": ("PENDING", "DELIVERED"), "set": {"status": "FAILED"}},
    {"status": ("PENDING", "DELIVERED"), "where": {"ack_status__isnull": True}},
    {"ack_status": ("PENDING", "ACKED"), "where": {"status": "DELIVERED"}},
])
def test_transition_refuses_state_columns_outside_the_pairs(kwargs, django_assert_num_queries):
    from notifications.models import Notification

    with django_assert_num_queries(0), pytest.raises(IllegalTransition):
        transition(Notification, **kwargs)


@pytest.mark.django_db
def test_transition_writes_only_from_the_expected_prior_state(rt, channel):
    from notifications.models import Notification
    from rthelpers import request

    nid = rt.accept("alice", request()).notification.id
    rows = Notification.objects.filter(id=nid)
    # Prior state does not hold: nothing written.
    assert transition(rows, status=("FAILED", "PENDING"), set={"cycle": 7}) == 0
    assert transition(rows, status=("PENDING", "FAILED"), where={"lease_token": "not-mine"}) == 0
    assert rows.get().status == "PENDING"
    assert transition(rows, status=("PENDING", "FAILED"), set={"dead_letter": True}) == 1
    row = rows.get()
    assert (row.status, row.dead_letter) == ("FAILED", True)
    assert transition(rows, status=("FAILED", "FAILED"), edge="resolve", set={"dead_letter": False}) == 1
    assert transition(rows, status=(("PENDING", "FAILED"), "PENDING"), edge="retry") == 1
    assert rows.get().status == "PENDING"


@pytest.mark.parametrize("field,old,new", LACKING)
def test_sql_guard_refuses_every_edge_the_table_lacks(field, old, new):
    for name in _ALL_NAMES:
        with pytest.raises(IllegalTransition):
            sql_guard(field, [(old, new)], edge=name)


def test_sql_guard_names_the_prior_state_for_a_batch_of_outcomes():
    assert sql_guard("status", [("PENDING", "DELIVERED"), ("PENDING", "FAILED")], column="n.status") == (
        "n.status = %s", ["PENDING"])
    assert sql_guard("status", [(("PENDING", "FAILED"), "PENDING")], edge="retry") == ("status IN (%s, %s)",
                                                                                      ["PENDING", "FAILED"])
    assert sql_guard("ack_status", [(None, "PENDING")], column="n.ack_status") == ("n.ack_status IS NULL", [])
    # a retry among the outcomes must be named
    with pytest.raises(IllegalTransition):
        sql_guard("status", [("PENDING", "DELIVERED"), ("PENDING", "PENDING")])
    assert sql_guard("status", [("PENDING", "DELIVERED"), ("PENDING", "PENDING")], edge="retry")[1] == ["PENDING"]
    with pytest.raises(IllegalTransition):  # one WHERE clause cannot expect different prior states
        sql_guard("status", [("PENDING", "FAILED"), ("FAILED", "PENDING")])


@pytest.mark.django_db
def test_every_ack_audit_row_written_is_an_edge_of_the_table(rt, clock, channel):
    """Snooze, ACK, dismiss and the timeout sweep: each ack audit row names an edge of
    ``ACK_TRANSITIONS``, and the one self-edge (PENDING -> PENDING) is exactly the snooze."""
    from notifications.models import AckAuditRecord
    from rthelpers import request

    ids = [rt.accept("alice", request(require_ack=True, title=f"t{i}")).notification.id for i in range(3)]
    clock.advance(5)
    rt.dispatch()
    rt.snooze(ids[0], "bob", 600)
    rt.acknowledge(ids[0], "bob")
    rt.acknowledge(ids[1], "carol", dismiss=True)
    clock.advance(86400)
    assert rt.expire() == [ids[2]]
    audits = list(AckAuditRecord.objects.all())
    assert sorted((a.old_status, a.new_status) for a in audits) == [
        ("PENDING", "ACKED"), ("PENDING", "DISMISSED"), ("PENDING", "PENDING"), ("PENDING", "TIMED_OUT")]
    for a in audits:
        snooze = a.old_status == a.new_status
        assert snooze == (a.ack_metadata.get("action") == "snooze")
        check_ack(a.old_status, a.new_status, edge="snooze" if snooze else None)


# The write paths of notifications' state columns, found in the source: the helpers are the only way.
_ORM_WRITES = {"update", "bulk_update", "create", "bulk_create", "get_or_create", "update_or_create", "Notification"}


def _state_writes_outside_the_helpers():
    """``(file:line, what)`` of every write of ``status`` / ``ack_status`` under ``notifications/``
    that does not come from ``transition``, ``sql_guard`` or ``initial``: an ORM write or model
    construction naming either column, and any raw ``UPDATE uns_notifications`` setting one without
    the guard of that column formatted into its WHERE clause (``{guard}`` / ``{ack_guard}``)."""
    import ast
    import pathlib
    import re

    import notifications

    root = pathlib.Path(notifications.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        where = path.relative_to(root.parent)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                named = {k.arg for k in node.keywords} & {"status", "ack_status"}
                listed = {a.value for a in ast.walk(node) if isinstance(a, ast.Constant)} & {"status", "ack_status"}
                if name in _ORM_WRITES and (named or (name == "bulk_update" and listed)):
                    found.append((f"{where}:{node.lineno}", f"{name}({', '.join(sorted(named | listed))})"))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                sql = " ".join(node.value.split())
                if not re.search(r"UPDATE uns_notifications\b", sql, re.I):
                    continue
                assignments = sql.split(" SET ", 1)[-1].split(" WHERE ", 1)[0]
                for column, guard in (("status", "{guard}"), ("ack_status", "{ack_guard}")):
                    if re.search(rf"(?<![\w.]){column}\s*=", assignments) and guard not in sql:
                        found.append((f"{where}:{node.lineno}", f"raw SQL sets {column} without {guard}"))
    return found


def test_no_code_writes_a_state_column_except_through_the_transition_helpers():
    """The table drives the writes. ``transition`` (conditional ORM UPDATE),
    ``sql_guard`` (raw batched UPDATEs) and ``initial`` (intake's INSERT) check every edge; nothing
    else in ``notifications/`` may set ``status`` or ``ack_status``."""
    assert _state_writes_outside_the_helpers() == []
