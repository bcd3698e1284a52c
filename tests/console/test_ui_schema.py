"""The /ui read models are described in ``console.schemas`` (pydantic), and the console's
TypeScript types are generated from that description: every /ui route is described, every
response validates against its model (no unknown member, none missing), and the drift check
(``manage.py uns_ui_schema --check``, run by ``scripts/check_ui_types.sh`` in
``scripts/test.sh``) fails when a /ui field changes without regenerating."""
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from pydantic import BaseModel

from console import schemas
from console.management.commands.uns_ui_schema import drifted
from uihelpers import populate, ui_paths, ui_routes

pytestmark = pytest.mark.django_db


def as_openapi(route: str) -> str:
    parts = ["{" + p.split(":", 1)[1].rstrip(">") + "}" if p.startswith("<") else p for p in route.split("/")]
    return "/" + "/".join(parts)


def test_every_ui_route_is_described():
    assert {as_openapi(r) for r, _ in ui_routes()} == set(schemas.ROUTES)


def test_every_ui_response_validates_against_its_model(ui, rt, clock, webhook, channel):
    ids = populate(rt, clock, webhook, n=2)
    rt.run_bulk(ids["bulk"], "olga", 1)  # a settled item and unsettled ones
    client = ui(groups=("console", "operator", "responder", "policy_admin"))
    paths = {**ui_paths(ids["leader"][0]), **{f"detail:{k}": f"/ui/notifications/{v[0]}" for k, v in ids.items()
                                               if k != "bulk"}}
    for route, path in paths.items():
        response = client.get(path)
        assert response.status_code == 200, (path, response.content)
        key = "ui/notifications/<str:notification_id>" if route.startswith("detail:") else route
        model, _ = schemas.ROUTES[as_openapi(key)]
        model.model_validate(response.json())  # raises on a member the model does not know or lacks


def test_a_bulk_run_validates_too(rt, clock, webhook, channel):
    ids = populate(rt, clock, webhook)
    schemas.BulkRun.model_validate(rt.run_bulk(ids["bulk"], "olga"))


def copy_generated(tmp_path: Path) -> Path:
    for rel in schemas.rendered():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(settings.BASE_DIR) / rel, target)
    return tmp_path


def test_the_committed_generated_files_are_up_to_date():
    assert drifted(Path(settings.BASE_DIR)) == []
    call_command("uns_ui_schema", "--check")


def test_the_check_fails_when_a_ui_field_changes_without_regenerating(tmp_path, monkeypatch, settings):
    base = copy_generated(tmp_path)
    assert drifted(base) == []

    class InboxItem(schemas.InboxItem):  # a /ui field added, nothing regenerated
        snoozed_until: float | None

    model: type[BaseModel]
    model, summary = schemas.ROUTES["/ui/inbox"]

    class InboxPage(schemas.NowPage):
        items: list[InboxItem]

    monkeypatch.setitem(schemas.ROUTES, "/ui/inbox", (InboxPage, summary))
    assert drifted(base) == ["frontend/src/generated/ui-openapi.json"]
    settings.BASE_DIR = tmp_path
    with pytest.raises(CommandError, match="ui-openapi.json"):
        call_command("uns_ui_schema", "--check")
    call_command("uns_ui_schema")  # regenerating is the fix
    assert drifted(base) == []
    assert "snoozed_until" in (base / "frontend/src/generated/ui-openapi.json").read_text()


def test_a_changed_limit_is_drift_too(tmp_path, monkeypatch):
    base = copy_generated(tmp_path)
    monkeypatch.setattr(schemas.verbs, "MAX_REASON_LENGTH", 500)
    assert drifted(base) == ["frontend/src/generated/limits.ts"]
