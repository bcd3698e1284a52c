"""The shared row loader: one notification by id, for every runtime verb that acts on one."""

import json
import operator
from collections.abc import Callable
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connections, models

from core.errors import NotFound
from core.keys import is_notification_id

from core.transitions import IllegalTransition, sql_guard, state_columns, table_for

from ..models import Notification


def get(notification_id: str) -> Notification:
    """The row, or ``NotFound``. A value that cannot be an id is not found without a query (a
    NUL byte, say, is an error on PostgreSQL rather than a miss)."""
    row = None
    if is_notification_id(notification_id):
        # the ORM's query, written once (``quoted_columns``): its compilation was the cost
        connection = current_connection()
        columns = ", ".join(quoted_columns(Notification))
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {columns} FROM uns_notifications WHERE id = %s",  # nosec B608  # the model's quoted columns
                           [notification_id])
            found = cursor.fetchone()
        row = from_values(Notification, found) if found is not None else None
    if row is None:
        raise NotFound(f"notification {notification_id} does not exist", notification_id=notification_id)
    return row


def current_connection():
    """The default database's connection object of this thread (what ``django.db.connection``
    stands for), for a function that touches it many times: every attribute read through the
    ``django.db.connection`` proxy is a context-local lookup (~4 us each on the loaded bench
    machine, tens per accept: each field's ``get_db_prep_save`` reads ``connection.ops``).
    Use it within one call; never keep it across threads."""
    return connections[DEFAULT_DB_ALIAS]


# --- Rows read or written with one hand-written statement (the hot paths: intake, authentication) --
# The ORM's query compilation costs more CPU than the round trip on these paths (profiled:
# bench/); these build the column list and the converters once per backend and model, and turn
# raw column values back into model instances exactly as the ORM would.

_COLUMNS: dict[tuple, list[str]] = {}
_CONVERTERS: dict[tuple, list] = {}


def quoted_columns(model, alias: str = "") -> list[str]:
    """``model``'s concrete columns in ``_meta.concrete_fields`` order, quoted for the current
    backend and prefixed with ``alias.`` when given (built once per backend, model and alias)."""
    connection = current_connection()

    cache_key = (connection.vendor, model, alias)
    columns = _COLUMNS.get(cache_key)
    if columns is None:
        prefix = f"{alias}." if alias else ""
        columns = _COLUMNS[cache_key] = [prefix + connection.ops.quote_name(f.column)
                                         for f in model._meta.concrete_fields]
    return columns


def from_values(model, values):
    """A ``model`` instance from raw column values in ``_meta.concrete_fields`` order (as
    ``quoted_columns`` selects them), with the backend's and the fields' converters applied, as the
    ORM would (``Model.from_db``: not ``adding``, bound to the default database)."""
    connection = current_connection()

    fields = model._meta.concrete_fields
    cache_key = (connection.vendor, model)
    converters = _CONVERTERS.get(cache_key)
    if converters is None:
        converters = []
        for field in fields:
            col = field.get_col(model._meta.db_table)
            converters.append((col, connection.ops.get_db_converters(col) + col.get_db_converters(connection)))
        _CONVERTERS[cache_key] = converters
    converted = []
    for (col, convert_all), value in zip(converters, values):
        for convert in convert_all:
            value = convert(value, col, connection)
        converted.append(value)
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


# Field classes whose stored value is their ``get_prep_value`` as a JSON scalar (or, for a
# JSONField without its own encoder, the JSON value itself): exact classes, not subclasses, which
# may store something else. With each, the Python types its ``get_prep_value`` returns unchanged
# (a value of another type, a str subclass, a bool in an IntegerField, ... is converted by it).
_NONE = type(None)
_JSON_DOCUMENT_FIELDS = {
    models.CharField: frozenset({str, _NONE}),
    models.TextField: frozenset({str, _NONE}),
    models.FloatField: frozenset({float, _NONE}),
    models.IntegerField: frozenset({int, _NONE}),
    models.BooleanField: frozenset({bool, _NONE}),
    models.JSONField: frozenset({dict, list, str, int, float, bool, _NONE}),
}
_DOCUMENT_INSERTS: dict = {}


@dataclass(frozen=True)
class _Document:
    """How ``_insert_document`` writes one model: its statement, column names, a getter of every
    field's value (``attrgetter``, in column order), the types each field stores as they are,
    and the fields (for ``get_prep_value`` of any other value)."""

    sql: str
    columns: tuple
    values: Callable
    as_is: tuple  # one frozenset of types per field
    fields: tuple


def _document_insert(connection, model) -> _Document | None:
    """The PostgreSQL statement that inserts ``model`` rows from one ``jsonb`` array of objects
    keyed by column (``jsonb_populate_recordset`` over the table's own row type, so each value is
    read by its column's input function), with what it needs to build the document; None when a
    field is of another class or is a JSONField with its own encoder. Built once per model."""
    if model in _DOCUMENT_INSERTS:
        return _DOCUMENT_INSERTS[model]
    fields = tuple(model._meta.concrete_fields)
    plan = None
    if len(fields) > 1 and all(type(f) in _JSON_DOCUMENT_FIELDS and getattr(f, "encoder", None) is None
                               for f in fields):
        table, columns = connection.ops.quote_name(model._meta.db_table), ", ".join(quoted_columns(model))
        plan = _Document(
            f"INSERT INTO {table} ({columns}) SELECT {columns} "  # nosec B608  # the model's own names
            f"FROM jsonb_populate_recordset(NULL::{table}, CAST(%s AS jsonb))",
            tuple(f.column for f in fields), operator.attrgetter(*(f.attname for f in fields)),
            tuple(_JSON_DOCUMENT_FIELDS[type(f)] for f in fields), fields)
    _DOCUMENT_INSERTS[model] = plan
    return plan


def _insert_document(connection, model, objs: list) -> bool:
    """``insert``'s PostgreSQL form for several rows: one statement whose one parameter is the
    rows as a JSON document. psycopg splits and caches a short statement once, where the
    multi-row VALUES list (ten parameters a row, a new text for every batch size, past psycopg's
    cache limits) was split and each parameter quoted in Python on every call: a third of a
    dispatch worker's CPU (bench/profile_dispatch.py). The values are stored exactly as
    ``get_db_prep_save`` would (each field's ``get_prep_value``, skipped for a value of a type it
    returns unchanged; a JSON ``null`` is SQL NULL, as None is; a JSONField's value is its JSON).
    False, with nothing written, when the model or a value does not fit (NaN or infinity, a
    value JSON cannot encode): the caller uses the VALUES form."""
    plan = _document_insert(connection, model)
    if plan is None:
        return False
    documents = []
    for obj in objs:
        values = plan.values(obj)
        if not all(map(frozenset.__contains__, plan.as_is, map(type, values))):  # C loops: no call per value
            values = [f.get_prep_value(v) for f, v in zip(plan.fields, values)]
        documents.append(dict(zip(plan.columns, values)))
    try:
        document = json.dumps(documents, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return False
    with connection.cursor() as cursor:
        cursor.execute(plan.sql, [document])
    return True


def insert(model, objs: list) -> None:
    """INSERT ``objs`` (unsaved ``model`` instances whose every column is set: no database
    defaults, no auto fields) in one multi-row statement, as ``bulk_create`` would store them
    (each field's ``pre_save`` and ``get_db_prep_save``), without compiling a query per call; the
    instances are then bound to the database (not ``adding``). Several rows on PostgreSQL go as
    one JSON document parameter (``_insert_document``). Raises what the database raises
    (``IntegrityError`` for a duplicate key)."""
    connection = current_connection()

    if not objs:
        return
    if len(objs) > 1 and connection.vendor == "postgresql" and _insert_document(connection, model, objs):
        for obj in objs:
            obj._state.adding, obj._state.db = False, connection.alias
        return
    fields = model._meta.concrete_fields
    row = f"({', '.join(['%s'] * len(fields))})"
    head = f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({', '.join(quoted_columns(model))}) VALUES "
    size = max(1, connection.ops.bulk_batch_size(fields, objs))  # SQLite's limit on parameters, as bulk_create
    with connection.cursor() as cursor:
        for start in range(0, len(objs), size):
            batch = objs[start:start + size]
            params = []
            for obj in batch:
                params.extend(f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields)
            cursor.execute(head + ", ".join([row] * len(batch)), params)
    for obj in objs:
        obj._state.adding, obj._state.db = False, connection.alias


def update(model, pk, changes: dict, where: str = "", params=(), *, states: dict | None = None,
           edge: str | None = None):
    """``UPDATE`` the row of ``model`` whose primary key is ``pk``, setting ``changes`` (field
    name -> value, stored as the ORM stores it: each field's ``get_db_prep_save``) when the SQL
    condition ``where`` (over the table's own columns, ``%s`` for ``params``) also holds, and
    read it back in the same statement (``RETURNING``): the updated instance (``from_values``),
    or None when no row matched. One hand-written statement, no query compilation.

    ``states``: the state columns to move, ``{column: (old, new)}`` as
    ``core.transitions.transition`` takes them (``edge`` names a self-edge): each edge is
    checked against its table and its guard (``sql_guard``: the prior state) joins the WHERE
    clause. A state column in ``changes`` (one with a table in ``core.transitions``) raises
    ``IllegalTransition`` before any query: its guard would be left to the caller."""
    connection = current_connection()

    meta, q = model._meta, connection.ops.quote_name
    unguarded = state_columns(meta.db_table).intersection(changes)
    if unguarded:
        raise IllegalTransition(f"rows.update: {sorted(unguarded)} of {meta.db_table} are state columns; "
                                "move them through states= so their guard names the prior state")
    conditions, condition_params, moves = [], [], {}
    for column, pair in (states or {}).items():
        guard, guard_params = sql_guard(table_for(meta.db_table, column), [pair], edge=edge, column=q(column))
        conditions.append(guard)
        condition_params.extend(guard_params)
        moves[column] = pair[1]
    if where:
        conditions.append(f"({where})")
        condition_params.extend(params)
    changes = {**changes, **moves}
    fields = [meta.get_field(name) for name in changes]
    sql = (f"UPDATE {q(meta.db_table)} SET {', '.join(f'{q(f.column)} = %s' for f in fields)} "
           f"WHERE {q(meta.pk.column)} = %s{''.join(f' AND {c}' for c in conditions)} "
           f"RETURNING {', '.join(quoted_columns(model))}")
    values = [f.get_db_prep_save(value, connection) for f, value in zip(fields, changes.values())]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, pk, *condition_params])
        found = cursor.fetchone()
    return from_values(model, found) if found is not None else None
