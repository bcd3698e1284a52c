"""The database cache table ``uns_cache``: the login throttle's shared counters when
no ``REDIS_URL`` is set (uns_project/settings.py, console/throttle.py). A migration, so
``migrate`` is all a deployment runs; created whatever CACHES says today, so switching from
Redis to the database later needs nothing more."""
from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

TABLE = "uns_cache"


def create(apps, schema_editor):
    command = CreateCacheTable()
    command.verbosity = 0  # read when the table already exists (made by createcachetable)
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = []
    operations = [migrations.RunPython(create, drop, elidable=False)]
