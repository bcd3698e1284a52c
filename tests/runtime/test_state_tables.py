"""Every state column's table (``core.transitions.TABLES``), walked edge by edge on the database
under test (SQLite here, PostgreSQL in its leg): every edge a table lacks is refused by
``transition``, ``sql_guard``, ``rows.update`` and ``initial`` before any query and writes
nothing; every edge it has is written by ``transition`` and ``rows.update``; and no product
code writes a state column except through them."""
import ast
import itertools
import pathlib
import re
import uuid

import pytest
from django.apps import apps

from core.transitions import (ACK_STATUS, BULK_ACTION_STATE, BULK_ITEM_RESULT, DECISION_STATE, ESCALATION_STATE,
                              NOTIFICATION_STATUS, POLICY_STATUS, TABLES, IllegalTransition, sql_guard, state_columns,
                              table_for, transition)
from notifications.runtime import rows

# The machines as the support reference, DESIGN.md and the runtime define them (None: no state,
# or for a column that never stores None, no row yet: an INSERT).
EXPECTED = {
    NOTIFICATION_STATUS: {
        (None, "PENDING"), (None, "DEDUPLICATED"),
        ("PENDING", "PENDING"), ("PENDING", "DELIVERED"), ("PENDING", "FAILED"), ("PENDING", "DEDUPLICATED"),
        ("FAILED", "PENDING"), ("FAILED", "FAILED"),
    },
    ACK_STATUS: {
        (None, "PENDING"),
        ("PENDING", "PENDING"), ("PENDING", "ACKED"), ("PENDING", "DISMISSED"), ("PENDING", "TIMED_OUT"),
    },
    ESCALATION_STATE: {
        (None, "ACTIVE"),  # the timeout sweep starts the chain, or a responder escalates
        ("ACTIVE", "ACTIVE"),  # a step fires, or a responder escalates again
        ("ACTIVE", "RESPONDED"), ("ACTIVE", "EXHAUSTED"),
        ("EXHAUSTED", "ACTIVE"),  # a responder escalates after the chain ended: the last level again
    },
    DECISION_STATE: {
        (None, "pending"), (None, "approved"), (None, "denied"),
        ("pending", "pending"),  # one approval of several recorded
        ("pending", "approved"), ("pending", "denied"), ("pending", "expired"),
    },
    BULK_ACTION_STATE: {(None, "RUNNING"), ("RUNNING", "DONE")},
    BULK_ITEM_RESULT: {(None, "settled"), (None, "refused")},
    POLICY_STATUS: {
        (None, "DRAFT"), (None, "ACTIVE"),  # a new version; the cold bootstrap's default policy
        ("DRAFT", "DRAFT"),  # a content edit
        ("DRAFT", "ACTIVE"), ("DRAFT", "RETIRED"), ("ACTIVE", "RETIRED"),
    },
}
SELF_EDGES = {
    NOTIFICATION_STATUS: {"PENDING": {"retry", "lease", "promote", "relink", "hold"}, "FAILED": {"resolve"}},
    ACK_STATUS: {"PENDING": {"snooze", "hold"}},
    ESCALATION_STATE: {"ACTIVE": {"escalate", "advance", "hold"}},
    DECISION_STATE: {"pending": {"record_approval"}},
    BULK_ACTION_STATE: {},
    BULK_ITEM_RESULT: {},
    POLICY_STATUS: {"DRAFT": {"edit"}},
}
ALL_NAMES = [None, *sorted({name for t in TABLES for names in t.self_edges.values() for name in names})]


def _edges(table):
    return {(old, new) for old, targets in table.edges.items() for new in targets}


def _missing(table):
    """Every (old, new) the table lacks: from None or any state, to None or any state."""
    values = [None, *(state for state in table.edges if state is not None)]
    return [(old, new) for old, new in itertools.product(values, values) if (old, new) not in _edges(table)]


def _misnamed(table):
    """Every self-edge the table has, under every name it does not accept (None included)."""
    return [(old, name) for old, names in table.self_edges.items() for name in ALL_NAMES if name not in names]


MISSING = [(t, old, new) for t in TABLES for old, new in _missing(t)]
MISNAMED = [(t, old, name) for t in TABLES for old, name in _misnamed(t)]
ALLOWED_UPDATES = [(t, old, new) for t in TABLES for old, new in sorted(_edges(t), key=str)
                   if old is not None or t.nullable]


def _id(value):
    return value.name if hasattr(value, "name") and hasattr(value, "edges") else repr(value)


def _model(table):
    return next(m for m in apps.get_models() if m._meta.db_table == table.db_table)


def test_every_table_is_exactly_its_machine():
    assert set(TABLES) == set(EXPECTED)
    for table in TABLES:
        assert _edges(table) == EXPECTED[table], table.name
        assert {s: set(n) for s, n in table.self_edges.items()} == SELF_EDGES[table], table.name
        # every self-edge the table has is named, and every name belongs to a self-edge it has
        assert {old for old, new in _edges(table) if old == new} == set(table.self_edges), table.name


def test_every_table_names_a_column_of_a_model_with_its_nullability():
    for table in TABLES:
        field = _model(table)._meta.get_field(table.column)
        assert field.null == table.nullable, table.name
        assert table_for(table.db_table, table.column) is table
        assert table.column in state_columns(table.db_table)


# --- rows in every state, and proof that a refused write changed none of them -------------------

def _notification(**state):
    from notifications.models import Notification

    nid = str(uuid.uuid4())
    return Notification.objects.create(
        id=nid, key=uuid.uuid4().hex, fingerprint="f" * 64, principal="alice",
        notification={"source": "s", "title": "t", "metadata": {}}, outcome={}, attempts=0, cycle=1,
        cycle_attempts=0, next_attempt=0.0, lease_until=0.0, dead_letter=False,
        **{"status": "DELIVERED", **state})


def _decision(**state):
    from policies.governance.models import GovernanceDecision

    return GovernanceDecision.objects.create(
        id=str(uuid.uuid4()), key=uuid.uuid4().hex, fingerprint="f" * 64, principal="agent", action="deploy",
        risk="high", request={}, outcome="REQUIRE_APPROVAL", reason="", revision=1, snapshot_hash="s" * 64,
        created_at=0.0, **state)


def _bulk(**state):
    from notifications.models import BulkAction

    return BulkAction.objects.create(
        id=str(uuid.uuid4()), action="ack", list="inbox", filter={}, params={}, created_by="op", created_at=0.0,
        expected=1, matched=1, total=1, **{"state": "RUNNING", **state})


def _item(**state):
    from notifications.models import BulkActionItem

    bulk = _bulk()
    return BulkActionItem.objects.create(bulk=bulk, ordinal=0, notification_id=str(uuid.uuid4()), **state)


def _policy(**state):
    from policies.models import Policy

    return Policy.objects.create(id=str(uuid.uuid4()), policy_id=f"p-{uuid.uuid4().hex[:8]}", version=1,
                                 created_by="admin", created_at=0.0, **state)


FACTORIES = {"uns_notifications": _notification, "uns_governance_decisions": _decision,
             "uns_bulk_actions": _bulk, "uns_bulk_action_items": _item, "notification_policies": _policy}


def _rows_in_every_state(table) -> dict:
    """One row of the table's model in each state it may hold: ``{state: row}``."""
    return {state: FACTORIES[table.db_table](**{table.column: state}) for state in table.states}


def _stored(table) -> list:
    return list(_model(table).objects.order_by("pk").values())


@pytest.mark.django_db
@pytest.mark.parametrize("table,old,new", MISSING, ids=_id)
def test_every_edge_a_table_lacks_is_refused_and_writes_nothing(table, old, new, django_assert_num_queries):
    by_state = _rows_in_every_state(table)
    model, before = _model(table), _stored(table)
    target = by_state.get(old) or next(iter(by_state.values()))
    for name in ALL_NAMES:
        with django_assert_num_queries(0):
            with pytest.raises(IllegalTransition):
                transition(model, **{table.column: (old, new)}, edge=name)
            with pytest.raises(IllegalTransition):
                transition(model.objects.filter(pk=target.pk), **{table.column: (old, new)}, edge=name)
            with pytest.raises(IllegalTransition):
                sql_guard(table, [(old, new)], edge=name)
            with pytest.raises(IllegalTransition):
                rows.update(model, target.pk, {}, states={table.column: (old, new)}, edge=name)
            if old is None:
                with pytest.raises(IllegalTransition):
                    table.initial(new)
            # Hidden among prior states that do have the edge, the lacking one refuses the whole write.
            olds = tuple(sorted({o for o, n in _edges(table) if n == new and o is not None} | {old} - {None}))
            if old is not None and len(olds) > 1:
                with pytest.raises(IllegalTransition):
                    transition(model, **{table.column: (olds, new)}, edge=name)
                with pytest.raises(IllegalTransition):
                    sql_guard(table, [(olds, new)], edge=name)
    assert _stored(table) == before


@pytest.mark.django_db
@pytest.mark.parametrize("table,old,name", MISNAMED, ids=_id)
def test_a_self_edge_under_another_name_is_refused_and_writes_nothing(table, old, name, django_assert_num_queries):
    by_state = _rows_in_every_state(table)
    model, before = _model(table), _stored(table)
    with django_assert_num_queries(0):
        with pytest.raises(IllegalTransition):
            transition(model, **{table.column: (old, old)}, edge=name)
        with pytest.raises(IllegalTransition):
            sql_guard(table, [(old, old)], edge=name)
        with pytest.raises(IllegalTransition):
            rows.update(model, by_state[old].pk, {}, states={table.column: (old, old)}, edge=name)
    assert _stored(table) == before


@pytest.mark.django_db
@pytest.mark.parametrize("table", TABLES, ids=_id)
def test_a_state_column_is_never_written_beside_the_pairs(table, django_assert_num_queries):
    """``rows.update`` refuses a state column in its plain changes, and ``transition`` one in
    ``set`` or ``where``, whatever the edge: the guard is never left to the caller."""
    by_state = _rows_in_every_state(table)
    model, before = _model(table), _stored(table)
    old, new = next((o, n) for o, n in sorted(_edges(table), key=str) if o is not None or table.nullable)
    row = by_state[old]
    with django_assert_num_queries(0):
        for value in table.states:
            with pytest.raises(IllegalTransition):
                rows.update(model, row.pk, {table.column: value})
            with pytest.raises(IllegalTransition):
                rows.update(model, row.pk, {table.column: value}, f"{table.column} IS NOT NULL")
        with pytest.raises(IllegalTransition):
            transition(model, **{table.column: (old, new)}, set={table.column: new}, edge="x")
        with pytest.raises(IllegalTransition):
            transition(model, **{table.column: (old, new)}, where={f"{table.column}__in": [old]}, edge="x")
        with pytest.raises(IllegalTransition):
            transition(model)  # no edge at all
        with pytest.raises(IllegalTransition):  # not a state column of this model
            transition(model, **{"no_such_state": (old, new)})
    assert _stored(table) == before


@pytest.mark.django_db
@pytest.mark.parametrize("table,old,new", ALLOWED_UPDATES, ids=_id)
def test_every_edge_a_table_has_is_written_from_its_prior_state_only(table, old, new):
    model = _model(table)
    edge = next(iter(sorted(table.self_edges.get(old, ()))), None)
    by_state = _rows_in_every_state(table)
    others = {s: r for s, r in by_state.items() if s != old}
    assert transition(model.objects.filter(pk=by_state[old].pk), **{table.column: (old, new)}, edge=edge) == 1
    assert getattr(model.objects.get(pk=by_state[old].pk), table.column) == new
    for state, row in others.items():  # the prior state does not hold: nothing written
        assert transition(model.objects.filter(pk=row.pk), **{table.column: (old, new)}, edge=edge) == 0
        assert rows.update(model, row.pk, {}, states={table.column: (old, new)}, edge=edge) is None
        assert getattr(model.objects.get(pk=row.pk), table.column) == state
    again = FACTORIES[table.db_table](**{table.column: old})
    written = rows.update(model, again.pk, {}, states={table.column: (old, new)}, edge=edge)
    assert getattr(written, table.column) == new == getattr(model.objects.get(pk=again.pk), table.column)


@pytest.mark.parametrize("table", [t for t in TABLES if not t.nullable], ids=_id)
def test_a_column_that_never_stores_none_has_no_update_from_none(table):
    """Its edges from None are INSERTs (``initial``); as an UPDATE's prior state None is refused."""
    for new in table.edges[None]:
        assert table.initial(new) == new
        with pytest.raises(IllegalTransition):
            sql_guard(table, [(None, new)])


# --- the source: nothing else writes a state column ----------------------------------------------

_PRODUCT = ("core", "notifications", "policies", "console")
_WRITES = {"update", "bulk_update", "create", "bulk_create", "get_or_create", "update_or_create"}


def _model_columns() -> dict:
    """Model class name -> its state columns."""
    return {_model(t).__name__: state_columns(t.db_table) for t in TABLES}


def _root_name(node):
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_initial(value) -> bool:
    func = value.func if isinstance(value, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr == "initial") or (isinstance(func, ast.Name)
                                                                           and func.id == "initial")


def _state_writes_outside_the_helpers(root: pathlib.Path | None = None) -> list:
    """``(file:line, what)`` of every write of a state column in the product packages that does
    not come from ``transition``, ``sql_guard``, ``rows.update(states=)`` or a table's
    ``initial``: an ORM write or model construction of a model with a state table naming one of
    its state columns (other than as ``initial(...)``), an assignment to a row's state attribute,
    and a raw ``UPDATE`` of such a table setting one without a ``{...guard}`` in its WHERE."""
    columns_of = _model_columns()
    tables_sql = {t.db_table: state_columns(t.db_table) for t in TABLES}
    every_column = set().union(*columns_of.values())
    root = root or pathlib.Path(__file__).resolve().parents[2]
    found = []
    for package in _PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            where = path.relative_to(root)
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                    model = _root_name(func) if name in _WRITES else (name if name in columns_of else None)
                    columns = columns_of.get(model, set())
                    named = {k.arg for k in node.keywords if k.arg in columns and not _is_initial(k.value)}
                    listed = ({a.value for a in ast.walk(node) if isinstance(a, ast.Constant)} & columns
                              if name == "bulk_update" else set())
                    if named | listed:
                        found.append((f"{where}:{node.lineno}", f"{model} {name}({', '.join(sorted(named | listed))})"))
                elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if (isinstance(target, ast.Attribute) and target.attr in every_column
                                and not (isinstance(target.value, ast.Name) and target.value.id == "self")):
                            found.append((f"{where}:{node.lineno}", f"assigns .{target.attr}"))
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    sql = " ".join(node.value.split())
                    for db_table, columns in tables_sql.items():
                        if not re.search(rf"UPDATE {db_table}\b", sql, re.I):
                            continue
                        assignments = sql.split(" SET ", 1)[-1].split(" WHERE ", 1)[0]
                        for column in columns:
                            if (re.search(rf"(?<![\w.]){column}\s*=", assignments)
                                    and not re.search(r"\{\w*guard\}", sql)):
                                found.append((f"{where}:{node.lineno}", f"raw SQL sets {db_table}.{column} unguarded"))
    return found


def test_no_product_code_writes_a_state_column_except_through_its_table():
    assert _state_writes_outside_the_helpers() == []
