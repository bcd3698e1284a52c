"""Counts and an index that keep the console's filtered lists as cheap at 1 M notifications as
at 10 k (``bench/run.py``'s growth phase):

- ``uns_status_counts.value`` becomes nullable text (a failure reason is longer than 32
  characters; a dead letter may have no reason), and the trigger function of migration 0005
  also maintains, in the writing statement's own transaction, the count of notifications per
  ``source`` (kind "source"; written on INSERT and DELETE only: ``notification`` is the request
  as accepted, never updated) and the dead letters (status FAILED with ``dead_letter``) per DLQ
  group (kinds "dlq:source", "dlq:severity", "dlq:reason", "dlq:channel"; not by dedup key, a
  value per incident, whose folded counts would grow with the dead letters), computed only from the rows of the statement that are or were dead letters, so a claim or a
  delivery extracts nothing from its rows' JSON. The rows already there are seeded with the
  table locked against writes, as 0005 did.
- ``ix_uns_failed_accepted``: the FAILED rows in listing order (``?status=FAILED``).
- On PostgreSQL, statistics on ``notification -> 'source'`` (``uns_notifications_source``), so
  the planner knows how many rows a ``?source=`` filter keeps (its default guess, 0.5 %, made it
  sort the whole table for a source that holds a quarter of it).
"""
from django.db import migrations, models

import notifications.models

# DLQ group kind -> the text the trigger counts for a dead letter (what the DLQ's group of
# that name shows: console.selectors._GROUP_FIELDS and lists.CHANNEL_FIELDS["dlq"]).
DLQ_KEYS = (("dlq:source", "r.notification ->> 'source'"), ("dlq:severity", "r.notification ->> 'severity'"),
            ("dlq:reason", "r.outcome ->> 'error_message'"), ("dlq:channel", "r.outcome ->> 'channels_failed'"))


def _dlq(table: str, sign: int) -> str:
    """The DLQ group keys of the dead letters in transition table ``table``, each with ``sign``."""
    values = ", ".join(f"('{kind}', {expr})" for kind, expr in DLQ_KEYS)
    return (f"SELECT g.kind, g.value, {sign} AS d FROM {table} AS r CROSS JOIN LATERAL (VALUES {values}) "
            f"AS g(kind, value) WHERE r.status = 'FAILED' AND r.dead_letter")


def _rows(table: str, sign: int, *, source: bool) -> str:
    parts = [f"SELECT 'status' AS kind, status::text AS value, {sign} AS d FROM {table}",
             f"SELECT 'ack_status', COALESCE(ack_status, 'NONE'), {sign} FROM {table}"]
    if source:
        parts.append(f"SELECT 'source', notification ->> 'source', {sign} FROM {table}")
    return " UNION ALL ".join([*parts, _dlq(table, sign)])


FUNCTION = f"""
CREATE OR REPLACE FUNCTION uns_count_states() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO uns_status_counts (kind, value, delta)
        SELECT kind, value, sum(d) FROM ({_rows('uns_new_rows', 1, source=True)}) AS s
        GROUP BY kind, value;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO uns_status_counts (kind, value, delta)
        SELECT kind, value, sum(d) FROM ({_rows('uns_old_rows', -1, source=True)}) AS s
        GROUP BY kind, value;
    ELSE
        INSERT INTO uns_status_counts (kind, value, delta)
        SELECT kind, value, sum(d) FROM ({_rows('uns_new_rows', 1, source=False)}
            UNION ALL {_rows('uns_old_rows', -1, source=False)}) AS s
        GROUP BY kind, value HAVING sum(d) <> 0;
    END IF;
    RETURN NULL;
END $$;
"""

# The 0005 function, for reversing.
OLD_FUNCTION = """
CREATE OR REPLACE FUNCTION uns_count_states() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO uns_status_counts (kind, value, delta)
        SELECT kind, value, count(*) FROM (
            SELECT 'status' AS kind, status AS value FROM uns_new_rows
            UNION ALL SELECT 'ack_status', COALESCE(ack_status, 'NONE') FROM uns_new_rows) AS s
        GROUP BY kind, value;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO uns_status_counts (kind, value, delta)
        SELECT kind, value, -count(*) FROM (
            SELECT 'status' AS kind, status AS value FROM uns_old_rows
            UNION ALL SELECT 'ack_status', COALESCE(ack_status, 'NONE') FROM uns_old_rows) AS s
        GROUP BY kind, value;
    ELSE
        INSERT INTO uns_status_counts (kind, value, delta)
        SELECT kind, value, sum(d) FROM (
            SELECT 'status' AS kind, status AS value, 1 AS d FROM uns_new_rows
            UNION ALL SELECT 'ack_status', COALESCE(ack_status, 'NONE'), 1 FROM uns_new_rows
            UNION ALL SELECT 'status', status, -1 FROM uns_old_rows
            UNION ALL SELECT 'ack_status', COALESCE(ack_status, 'NONE'), -1 FROM uns_old_rows) AS s
        GROUP BY kind, value HAVING sum(d) <> 0;
    END IF;
    RETURN NULL;
END $$;
"""

SEED = ("INSERT INTO uns_status_counts (kind, value, delta) "
        "SELECT 'source', notification ->> 'source', count(*) FROM uns_notifications GROUP BY 2 "
        "UNION ALL SELECT kind, value, sum(d) FROM (" + _dlq("uns_notifications", 1) + ") AS s GROUP BY kind, value")

STATISTICS = "CREATE STATISTICS IF NOT EXISTS uns_notifications_source ON (notification -> 'source') FROM uns_notifications"


def install(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("LOCK TABLE uns_notifications IN SHARE ROW EXCLUSIVE MODE")
    schema_editor.execute(FUNCTION)
    schema_editor.execute(SEED)
    schema_editor.execute(STATISTICS)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("LOCK TABLE uns_notifications IN SHARE ROW EXCLUSIVE MODE")
    schema_editor.execute(OLD_FUNCTION)
    schema_editor.execute("DELETE FROM uns_status_counts WHERE kind NOT IN ('status', 'ack_status')")
    schema_editor.execute("DROP STATISTICS IF EXISTS uns_notifications_source")


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0017_silences'),
    ]

    operations = [
        migrations.AlterField(
            model_name='statuscount',
            name='value',
            field=models.TextField(null=True),
        ),
        migrations.AddIndex(
            model_name='notification',
            index=models.Index(notifications.models.AcceptedAt(), models.F('id'), condition=models.Q(('status', 'FAILED')),
                               name='ix_uns_failed_accepted'),
        ),
        migrations.RunPython(install, uninstall),
    ]
