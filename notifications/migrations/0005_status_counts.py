"""``uns_status_counts`` (models.StatusCount) and, on PostgreSQL, the statement-level triggers on
``uns_notifications`` that maintain it, seeded from the rows already there.

One trigger function serves INSERT, UPDATE and DELETE: it adds +1 per row of the statement's
NEW transition table and -1 per row of its OLD one, grouped by (kind, value), and inserts only
the non-zero sums, so an UPDATE that changes no state (a claim, a lease check) writes nothing.
Transition tables cannot be combined with an ``UPDATE OF column`` list, hence the net sum.
TRUNCATE (Django's test flush) fires none of them; it truncates ``uns_status_counts`` too.
"""
from django.db import migrations, models

FUNCTION = """
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

TRIGGERS = [
    "CREATE TRIGGER uns_count_states_insert AFTER INSERT ON uns_notifications "
    "REFERENCING NEW TABLE AS uns_new_rows FOR EACH STATEMENT EXECUTE FUNCTION uns_count_states()",
    "CREATE TRIGGER uns_count_states_update AFTER UPDATE ON uns_notifications "
    "REFERENCING OLD TABLE AS uns_old_rows NEW TABLE AS uns_new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION uns_count_states()",
    "CREATE TRIGGER uns_count_states_delete AFTER DELETE ON uns_notifications "
    "REFERENCING OLD TABLE AS uns_old_rows FOR EACH STATEMENT EXECUTE FUNCTION uns_count_states()",
]

# Taken with the table locked against writes, so no row is counted twice or missed.
SEED = """
INSERT INTO uns_status_counts (kind, value, delta)
SELECT 'status', status, count(*) FROM uns_notifications GROUP BY status
UNION ALL
SELECT 'ack_status', COALESCE(ack_status, 'NONE'), count(*) FROM uns_notifications GROUP BY 2
"""

DROP = [
    "DROP TRIGGER IF EXISTS uns_count_states_insert ON uns_notifications",
    "DROP TRIGGER IF EXISTS uns_count_states_update ON uns_notifications",
    "DROP TRIGGER IF EXISTS uns_count_states_delete ON uns_notifications",
    "DROP FUNCTION IF EXISTS uns_count_states()",
]


def install(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("LOCK TABLE uns_notifications IN SHARE ROW EXCLUSIVE MODE")
    schema_editor.execute(FUNCTION)
    for sql in TRIGGERS:
        schema_editor.execute(sql)
    schema_editor.execute(SEED)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in DROP:
        schema_editor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0004_escalation_due'),
    ]

    operations = [
        migrations.CreateModel(
            name='StatusCount',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('kind', models.CharField(max_length=16)),
                ('value', models.CharField(max_length=32)),
                ('delta', models.BigIntegerField()),
            ],
            options={'db_table': 'uns_status_counts'},
        ),
        migrations.RunPython(install, uninstall),
    ]
