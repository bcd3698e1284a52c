"""Escalation chains: the chain's position and state on each notification. Rows an
older UNS left with an automatic escalation due start their (frozen) chain as ACTIVE."""
from django.db import migrations, models


def activate_due(apps, schema_editor):
    Notification = apps.get_model("notifications", "Notification")
    Notification.objects.filter(escalation_due__isnull=False).update(escalation_state="ACTIVE")


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0008_chsvc_channel_audit_and_results'),
    ]

    operations = [
        migrations.AddField(
            model_name='notification',
            name='escalation_state',
            field=models.CharField(max_length=16, null=True),
        ),
        migrations.AddField(
            model_name='notification',
            name='escalation_step',
            field=models.IntegerField(db_default=0, default=0),
        ),
        migrations.RunPython(activate_due, migrations.RunPython.noop),
    ]
