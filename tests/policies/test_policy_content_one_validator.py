"""One table of bad policy contents, refused identically by every way a policy admin writes one:
the admin's editor (its check as they type and its save), ``POST``/``PUT`` over
``/api/v1/policies...`` and ``manage.py uns_policy load``. Each refusal names the same fields with
the same messages, because all of them apply ``policies.content.validate_content``."""
import html
import json
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from policies import store
from policies.content import validate_content
from policies.models import Policy
from policyhelpers import content

pytestmark = pytest.mark.django_db


def _with(**changes):
    body = content()
    for path, value in changes.items():
        target = body
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value
    return body


BAD = {
    "max_attempts zero": _with(defaults__max_attempts=0),
    "unknown delivery mode": _with(defaults__delivery_mode="SOMETIMES"),
    "channels not a list": _with(defaults__channels="console"),
    "rule without a name": _with(rules__0__name=""),
    "unknown matcher": _with(rules__0__match={"colour": ["red"]}),
    "negative dedup window": _with(defaults__dedup_window_seconds=-1),
    "schema version 2": _with(schema_version=2),
    "not an object": ["schema_version", 1],
}


@pytest.fixture
def ada():
    store.ensure_initialized()
    user = User.objects.create(username="ada", is_staff=True)
    user.groups.add(*Group.objects.filter(name="policy_admin"))
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("name", BAD)
def test_every_path_refuses_the_same_content_with_the_same_errors(name, ada, policy_admin, tmp_path):
    bad = BAD[name]
    expected = validate_content(bad)
    assert expected, name
    lines = [f"{e['field'] or '(content)'}: {e['message']}" for e in expected]

    # The admin: the check as the admin types, and the save.
    live = ada.post(reverse("admin:policies_policy_validate"), {"content": json.dumps(bad)}).json()
    assert (live["valid"], live["errors"]) == (False, expected)
    page = html.unescape(ada.post(reverse("admin:policies_policy_add"),
                                  {"policy_id": "billing", "content": json.dumps(bad)}).content.decode())
    assert all(line in page for line in lines), page

    # HTTP: a new DRAFT, and an edit of an existing one.
    created = policy_admin.post("/api/v1/policies", {"policy_id": "billing", "content": bad}, format="json")
    if isinstance(bad, dict):
        assert (created.status_code, created.json()["code"], created.json()["errors"]) == (
            400, "invalid_policy_content", expected)
    else:  # the request schema refuses a non-object before the store sees it
        assert created.status_code == 400
    draft = store.create_draft("edited", content(), actor="x")
    edited = policy_admin.put(f"/api/v1/policies/edited/versions/{draft.version}", {"content": bad}, format="json")
    if isinstance(bad, dict):
        assert (edited.status_code, edited.json()["errors"]) == (400, expected)
    else:
        assert edited.status_code == 400

    # The command line.
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(CommandError) as refused:
        call_command("uns_policy", "--actor", "ops", "load", str(path), "--policy-id", "billing", stdout=StringIO())
    assert "invalid_policy_content" in str(refused.value)
    assert all(f"{e['field']}: {e['message']}" in str(refused.value) for e in expected)

    assert not Policy.objects.filter(policy_id="billing").exists()


def test_the_editor_form_describes_the_settings_the_content_rule_knows():
    """The form's model (policies/editor.py) names exactly the complete defaults and offers the
    delivery modes the content rule accepts; it decides nothing itself."""
    from policies.content import BUILTIN_DEFAULTS, DELIVERY_MODES
    from policies.editor import settings_schema

    schema = settings_schema(["console", "pager"])
    assert set(schema["properties"]) == set(BUILTIN_DEFAULTS)
    assert tuple(schema["properties"]["delivery_mode"]["enum"]) == DELIVERY_MODES
    assert schema["properties"]["channels"]["items"]["enum"] == ["console", "pager"]
    assert all(prop.get("description") for prop in schema["properties"].values())
