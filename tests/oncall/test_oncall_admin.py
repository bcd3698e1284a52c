"""The Django admin of teams and schedules writes through the on-call service (validated,
audited with the admin user as actor), needs the operator capability to write, and shows who is
on call now."""
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from notifications.runtime import oncall as service
from oncall.models import AuditRecord, Schedule, Team, TeamMember

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def staff():
    def make(name, groups):
        from notifications.seed import seed_groups_and_channels  # noqa: PLC0415  # the groups' grants, seeded on demand

        seed_groups_and_channels()
        user = User.objects.create(username=name, is_staff=True)
        user.groups.add(*Group.objects.filter(name__in=groups))
        client = Client()
        client.force_login(user)
        return client

    return make


def test_team_and_schedule_through_the_service(staff):
    for n in ("ann", "bob"):
        User.objects.create_user(n)
    olga = staff("olga", ("operator",))
    ann, bob = User.objects.get(username="ann"), User.objects.get(username="bob")
    r = olga.post(reverse("admin:oncall_team_add"), {"name": "dba", "description": "databases",
                                                    "members": [ann.pk, bob.pk]})
    assert r.status_code == 302, r.content[:2000]
    team = Team.objects.get(name="dba")
    assert list(TeamMember.objects.filter(team=team).values_list("user__username", flat=True)) == ["ann", "bob"]
    r = olga.post(reverse("admin:oncall_team_change", args=[team.pk]), {"description": "db", "members": [bob.pk]})
    assert r.status_code == 302
    assert list(TeamMember.objects.filter(team=team).values_list("user__username", flat=True)) == ["bob"]
    r = olga.post(reverse("admin:oncall_schedule_add"), {"name": "db", "description": "", "time_zone": "Mars/Base",
                                                        "team": team.pk})
    assert r.status_code == 200 and b"is not an IANA time zone name" in r.content and not Schedule.objects.exists()
    r = olga.post(reverse("admin:oncall_schedule_add"), {"name": "db", "description": "", "time_zone": "Europe/Berlin",
                                                        "team": team.pk})
    assert r.status_code == 302 and Schedule.objects.get(name="db").feed_token
    service.add_layer("db", {"members": ["ann"], "rotation_unit": "weeks", "rotation_count": 1,
                             "start": "2020-01-06T00:00", "time_zone": "UTC"}, actor="olga")
    page = olga.get(reverse("admin:oncall_schedule_changelist"))
    assert page.status_code == 200 and b"ann" in page.content
    assert list(AuditRecord.objects.order_by("at", "id").values_list("entity", "action", "actor")) == [
        ("team", "CREATE", "olga"), ("team", "UPDATE", "olga"), ("schedule", "CREATE", "olga"),
        ("schedule", "ADD_LAYER", "olga")]


def test_viewers_cannot_write(staff):
    vic = staff("vic", ("console",))
    assert vic.post(reverse("admin:oncall_team_add"), {"name": "x"}).status_code == 403
    assert not Team.objects.exists()
