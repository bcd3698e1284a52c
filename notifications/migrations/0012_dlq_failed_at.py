"""``uns_notifications.failed_at`` (when the latest settle to FAILED happened) and
``ix_uns_dlq_failed``, the dead letters by failure time (the DLQ's failure-time order
and its oldest failure read an index range instead of one audit lookup per dead letter).

The backfill gives every FAILED row the time its newest FAILED ``notification_audit_records``
row was written (what the DLQ showed as ``failed_at`` until now); a FAILED row without one (none
is written so; kept for safety) gets its ``next_attempt``, the time its last attempt was due."""
from django.db import migrations, models

BACKFILL = """
UPDATE uns_notifications SET failed_at = COALESCE(
    (SELECT MAX(a.created_at) FROM notification_audit_records a
      WHERE a.notification_id = uns_notifications.id AND a.status = 'FAILED'),
    next_attempt)
 WHERE status = 'FAILED'
"""


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0011_bulk_actions'),
    ]

    operations = [
        migrations.AddField(
            model_name='notification',
            name='failed_at',
            field=models.FloatField(null=True),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AddIndex(
            model_name='notification',
            index=models.Index(models.F('failed_at'), models.F('id'),
                               condition=models.Q(('dead_letter', True), ('status', 'FAILED')),
                               name='ix_uns_dlq_failed'),
        ),
    ]
