"""``notifications.access``: capabilities spelled once, the principal a token names in one
statement, and one visibility rule ("a console reader, or the producer that sent it")."""
import ast
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.exceptions import AuthenticationFailed

from core import capabilities as caps
from notifications import access
from notifications.runtime import NotFound

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
CAPABILITIES = {caps.SEND, caps.RESPOND, caps.OPERATE_DLQ, caps.VIEW_CONSOLE, caps.MANAGE_POLICIES}


def test_capability_strings_are_written_only_in_the_capabilities_module():
    """No module of the service spells a capability as a string literal: each imports the name."""
    spelled = []
    for package in ("core", "notifications", "policies", "console", "uns_project"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts or path == ROOT / "core" / "capabilities.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Constant) and node.value in CAPABILITIES:
                    spelled.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value}")
    assert spelled == []


def test_every_capability_is_a_permission_and_the_seeded_groups_grant_exactly_theirs():
    assert set().union(*caps.GROUP_CAPABILITIES.values()) == CAPABILITIES
    for name, capabilities in caps.GROUP_CAPABILITIES.items():
        granted = {f"{p.content_type.app_label}.{p.codename}" for p in Group.objects.get(name=name).permissions.all()}
        assert granted == set(capabilities), name


def test_token_principal_is_one_statement_and_refuses_what_knox_refuses(make_principal, django_assert_num_queries):
    user, token = make_principal("tok", ("producer",))
    for presented in (token, token.encode("utf-8")):
        with django_assert_num_queries(1):
            found, auth_token = access.token_principal(presented)
        assert found.pk == user.pk and auth_token.user_id == user.pk
    for bad in (b"\xff\xfe", "", "not-a-token", token + "x", "\x00"):
        with pytest.raises(AuthenticationFailed):
            access.token_principal(bad)
    user.is_active = False
    user.save()
    with pytest.raises(AuthenticationFailed):
        access.token_principal(token)


def test_an_expired_token_is_refused_and_deleted(make_principal):
    user, _ = make_principal("old", ("producer",))
    instance, token = AuthToken.objects.create(user=user, expiry=timedelta(seconds=-1))
    assert instance.expiry < timezone.now()
    with pytest.raises(AuthenticationFailed):
        access.token_principal(token)
    assert not AuthToken.objects.filter(pk=instance.pk).exists()


def test_visibility_console_reader_or_the_producer_that_sent_it(rt, make_principal, channel):
    sender, _ = make_principal("sender", ("producer",))
    other, _ = make_principal("other", ("producer",))
    reader, _ = make_principal("reader", ("console",))
    row = rt.accept("sender", {"source": "s", "title": "t"}).notification

    assert access.visible_notification(sender, row.id).id == row.id
    assert access.visible_notification(reader, row.id).id == row.id
    assert (access.visible_principal(sender), access.visible_principal(reader)) == ("sender", None)
    # Another producer gets exactly the error of an id that does not exist: no existence oracle.
    unknown = "00000000-0000-4000-8000-000000000000"
    refusals = []
    for nid in (row.id, unknown):
        with pytest.raises(NotFound) as caught:
            access.visible_notification(other, nid)
        refusals.append((caught.value.code, caught.value.detail.replace(nid, "<id>")))
    assert refusals[0] == refusals[1]
