"""``manage.py uns_policy``: load JSON or YAML drafts, list, show, activate, retire, clone."""
import json

import pytest
import yaml
from django.core.management import CommandError, call_command

from policies.content import DEFAULT_POLICY_ID
from policies.models import ACTIVE, DRAFT, RETIRED, Policy, PolicyAuditRecord
from policyhelpers import content

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("uns_policy", "--actor", "ops", *args, stdout=out)
    return out.getvalue()


def status(policy_id, version):
    return Policy.objects.get(policy_id=policy_id, version=version).status


def test_load_json_and_yaml_as_drafts(tmp_path):
    plain = tmp_path / "billing.json"
    plain.write_text(json.dumps(content(priority=4)))
    assert run("load", str(plain), "--policy-id", "billing") == "created billing v1 (DRAFT)\n"
    wrapped = tmp_path / "billing.yaml"
    # A serialized policy that says it is ACTIVE still loads as a new DRAFT.
    wrapped.write_text(yaml.safe_dump({"policy_id": "billing", "status": "ACTIVE", "content": content(priority=5)}))
    assert run("load", str(wrapped)) == "created billing v2 (DRAFT)\n"
    assert (status("billing", 1), status("billing", 2)) == (DRAFT, DRAFT)
    assert PolicyAuditRecord.objects.filter(policy_id="billing", action="CREATE", actor="ops").count() == 2


def test_load_with_activate_and_the_lifecycle_verbs(tmp_path):
    path = tmp_path / "p.yml"
    path.write_text(yaml.safe_dump(content(priority=4)))
    out = run("load", str(path), "--policy-id", "billing", "--activate")
    assert out.splitlines() == ["created billing v1 (DRAFT)", "activated billing v1; revision 2"]
    listing = run("list")
    assert "billing\tv1\tACTIVE" in listing and f"{DEFAULT_POLICY_ID}\tv1\tACTIVE" in listing
    assert "revision 2 (activate billing v1)" in run("current")
    assert json.loads(run("current", "--json"))["revision"] == 2
    assert json.loads(run("show", "billing", "1"))["content"]["priority"] == 4
    assert run("clone", "billing", "1") == "created billing v2 (DRAFT) from billing@1\n"
    assert run("activate", "billing", "2") == "activated billing v2; retired v1; revision 3\n"
    assert run("activate", "billing", "2") == "billing v2 is already ACTIVE (revision 3)\n"
    assert run("retire", "billing", "2") == "retired billing v2; revision 4\n"
    assert (status("billing", 1), status("billing", 2)) == (RETIRED, RETIRED)
    assert run("list", "--status", "ACTIVE").splitlines()[0].startswith(f"{DEFAULT_POLICY_ID}\tv1\tACTIVE")
    assert json.loads(run("simulate", '{"source": "s", "title": "t"}'))["revision"] == 4


def test_refusals_are_command_errors_with_codes_and_fields(tmp_path):
    run("current")
    with pytest.raises(CommandError, match="policy_not_found"):
        run("activate", "nope", "1")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(content(max_attempts=0)))
    with pytest.raises(CommandError, match=r"invalid_policy_content(.|\n)*defaults.max_attempts"):
        run("load", str(bad), "--policy-id", "x")
    with pytest.raises(CommandError, match="name the policy"):
        run("load", str(bad))
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [unclosed")
    with pytest.raises(CommandError, match="cannot read"):
        run("load", str(broken), "--policy-id", "x")
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(content()))
    run("load", str(path), "--policy-id", "x", "--activate")
    run("retire", "x", "1")
    with pytest.raises(CommandError, match="policy_retired"):
        run("activate", "x", "1")
    with pytest.raises(CommandError, match="default_policy_required"):
        run("retire", DEFAULT_POLICY_ID, "1")
    assert status("x", 1) == RETIRED and status(DEFAULT_POLICY_ID, 1) == ACTIVE
