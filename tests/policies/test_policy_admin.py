"""The policy lifecycle in Django admin, driven through Django's test client: drafts created and
edited with validation, lifecycle actions through the store, the side-by-side diff, the revision
history and the notifications accepted under a revision."""
import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from notifications.models import Notification
from policies import store
from policies.content import DEFAULT_POLICY_ID
from policies.models import ACTIVE, DRAFT, RETIRED, Policy, PolicyAuditRecord, PolicyContent, PolicySnapshot
from policyhelpers import content

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:policies_policy_changelist"


@pytest.fixture
def admin_client_for():
    def make(name="ada", groups=("policy_admin",), superuser=False):
        user = User.objects.create(username=name, is_staff=True, is_superuser=superuser)
        user.groups.add(*Group.objects.filter(name__in=groups))
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def ada(admin_client_for):
    store.ensure_initialized()
    return admin_client_for()


def version(policy_id, v):
    return Policy.objects.get(policy_id=policy_id, version=v)


def action(client, name, *rows):
    return client.post(reverse(CHANGELIST), {"action": name, "_selected_action": [r.pk for r in rows]}, follow=True)


def test_changelist_lists_versions(ada):
    store.create_draft("billing", content(), actor="x")
    response = ada.get(reverse(CHANGELIST))
    assert response.status_code == 200
    text = response.content.decode()
    assert "billing" in text and DEFAULT_POLICY_ID in text and "DRAFT" in text and "ACTIVE" in text


def test_add_draft_through_the_store_with_validation(ada):
    url = reverse("admin:policies_policy_add")
    form = ada.get(url)
    assert form.status_code == 200 and "&quot;schema_version&quot;: 1," in form.content.decode()

    bad = content(max_attempts=0)
    response = ada.post(url, {"policy_id": "billing", "content": json.dumps(bad)})
    assert response.status_code == 200  # the form again, with errors
    assert "defaults.max_attempts: must be &gt;= 1" in response.content.decode()
    assert not Policy.objects.filter(policy_id="billing").exists()

    response = ada.post(url, {"policy_id": "billing", "content": "{not json"})
    assert response.status_code == 200 and not Policy.objects.filter(policy_id="billing").exists()

    response = ada.post(url, {"policy_id": "billing", "content": json.dumps(content(priority=3))})
    assert response.status_code == 302
    row = version("billing", 1)
    assert (row.status, row.created_by) == (DRAFT, "ada")
    assert PolicyContent.objects.get(policy_id="billing").content["priority"] == 3
    assert PolicyAuditRecord.objects.get(policy_id="billing").action == "CREATE"


def test_edit_draft_through_the_store(ada):
    row = store.create_draft("billing", content(), actor="x")
    url = reverse("admin:policies_policy_change", args=[row.pk])
    page = ada.get(url).content.decode()
    assert 'name="content"' in page
    start = PolicyContent.objects.get(policy_id="billing").content_hash
    response = ada.post(url, {"content": json.dumps(content(max_attempts=8)), "expected_hash": start})
    assert response.status_code == 302
    assert PolicyContent.objects.get(policy_id="billing").content["defaults"]["max_attempts"] == 8
    assert PolicyAuditRecord.objects.get(action="EDIT").actor == "ada"

    # A stale form (someone edited since it was loaded) is refused, not silently overwritten.
    response = ada.post(url, {"content": json.dumps(content(max_attempts=2)), "expected_hash": start}, follow=True)
    assert "edited by someone else" in response.content.decode()
    assert PolicyContent.objects.get(policy_id="billing").content["defaults"]["max_attempts"] == 8

    response = ada.post(url, {"content": json.dumps(content(max_attempts=-1))})
    assert response.status_code == 200 and "defaults.max_attempts" in response.content.decode()


@pytest.mark.parametrize("final", [ACTIVE, RETIRED])
def test_active_and_retired_versions_are_read_only(ada, final):
    row = store.create_draft("billing", content(), actor="x")
    store.activate("billing", row.version, actor="x")
    if final == RETIRED:
        store.retire("billing", row.version, actor="x")
    url = reverse("admin:policies_policy_change", args=[row.pk])
    page = ada.get(url)
    assert page.status_code == 200
    assert 'name="content"' not in page.content.decode() and "max_attempts" in page.content.decode()
    before = PolicyContent.objects.get(policy_id="billing").content_hash
    assert ada.post(url, {"content": json.dumps(content(max_attempts=1))}).status_code == 403
    assert PolicyContent.objects.get(policy_id="billing").content_hash == before


def confirm_activation(client, *rows):
    return client.post(reverse("admin:policies_policy_activate"),
                       {"ids": ",".join(r.pk for r in rows), "confirm": "yes"}, follow=True)


def test_activate_retire_clone_actions_call_the_store(ada):
    draft = store.create_draft("billing", content(), actor="x")
    page = action(ada, "activate_selected", draft)
    assert "Yes, activate" in page.content.decode() and version("billing", 1).status == DRAFT  # asks first
    response = confirm_activation(ada, draft)
    assert "Activated: billing v1 (revision 2)" in response.content.decode()
    assert version("billing", 1).status == ACTIVE and version("billing", 1).activated_by == "ada"
    assert PolicySnapshot.objects.get(revision=2).reason == "activate billing v1"

    response = action(ada, "retire_selected", version("billing", 1))
    assert "Retired: billing v1" in response.content.decode()
    assert version("billing", 1).status == RETIRED
    assert PolicySnapshot.objects.order_by("-revision").first().revision == 3

    response = action(ada, "activate_selected", version("billing", 1))
    assert "RETIRED is final" in response.content.decode() and "Yes, activate" not in response.content.decode()
    assert "RETIRED is final" in confirm_activation(ada, version("billing", 1)).content.decode()
    assert version("billing", 1).status == RETIRED

    response = action(ada, "clone_selected", version("billing", 1))
    assert "Cloned: billing v1" in response.content.decode()
    assert (version("billing", 2).status, version("billing", 2).cloned_from) == (DRAFT, "billing@1")

    response = action(ada, "retire_selected", version(DEFAULT_POLICY_ID, 1))
    assert "cannot be retired, only replaced" in response.content.decode()
    assert PolicyAuditRecord.objects.get(action="ACTIVATE", policy_id="billing").actor == "ada"
    assert PolicyAuditRecord.objects.get(action="CLONE", policy_id="billing").actor == "ada"


def test_compare_action_and_the_side_by_side_diff_page(ada):
    a = store.create_draft("billing", content(max_attempts=3), actor="x")
    b = store.clone("billing", a.version, actor="x")
    store.edit_draft("billing", b.version, content(max_attempts=9, rules=[]), actor="x")
    response = action(ada, "compare_selected", a, b)
    assert response.redirect_chain[-1][0] == f"{reverse('admin:policies_policy_diff')}?a={a.pk}&b={b.pk}"
    page = response.content.decode()
    assert response.status_code == 200
    assert 'class="diff"' in page and "billing v1 (DRAFT)" in page and "billing v2 (DRAFT)" in page
    assert "diff_chg" in page or "diff_sub" in page
    assert "critical-needs-ack" in page  # the rule only the left side has

    same = ada.get(reverse("admin:policies_policy_diff"), {"a": a.pk, "b": a.pk}).content.decode()
    assert "identical content" in same

    assert "Select exactly two" in action(ada, "compare_selected", a).content.decode()


def test_the_diff_page_escapes_content(ada):
    row = store.create_draft("billing", {**content(), "description": "<script>alert(1)</script>"}, actor="x")
    page = ada.get(reverse("admin:policies_policy_diff"), {"a": row.pk, "b": version(DEFAULT_POLICY_ID, 1).pk})
    assert "<script>alert(1)</script>" not in page.content.decode()
    assert "&lt;script&gt;" in page.content.decode()


def test_revision_history_and_notifications_accepted_under_a_revision(ada, rt):
    first = rt.accept("alice", {"source": "svc", "title": "under one"}).notification
    draft = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=2), actor="x")
    store.activate(DEFAULT_POLICY_ID, draft.version, actor="x")
    second = rt.accept("alice", {"source": "svc", "title": "under two"}).notification

    history = ada.get(reverse("admin:policies_policysnapshot_changelist")).content.decode()
    assert "activate uns-default v2" in history and "bootstrap" in history

    snap1, snap2 = PolicySnapshot.objects.get(revision=1), PolicySnapshot.objects.get(revision=2)
    detail = ada.get(reverse("admin:policies_policysnapshot_change", args=[snap2.pk]))
    assert detail.status_code == 200 and "uns-default v2" in detail.content.decode()

    page = ada.get(reverse("admin:policies_policysnapshot_notifications", args=[snap1.pk])).content.decode()
    assert first.id in page and second.id not in page and "1 notification accepted under revision 1" in page
    page = ada.get(reverse("admin:policies_policysnapshot_notifications", args=[snap2.pk])).content.decode()
    assert second.id in page and first.id not in page
    assert Notification.objects.count() == 2

    audit = ada.get(reverse("admin:policies_policyauditrecord_changelist")).content.decode()
    assert "ACTIVATE" in audit and "BOOTSTRAP" in audit


def test_staff_without_the_policy_capability_cannot_use_it(admin_client_for):
    store.ensure_initialized()
    draft = store.create_draft("billing", content(), actor="x")
    client = admin_client_for("opal", groups=("operator",))
    for name in ("admin:policies_policy_changelist", "admin:policies_policy_add", "admin:policies_policy_diff",
                 "admin:policies_policysnapshot_changelist"):
        assert client.get(reverse(name)).status_code == 403, name
    assert action(client, "activate_selected", draft).status_code == 403
    assert version("billing", 1).status == DRAFT


def test_nothing_can_be_deleted_from_admin(ada):
    row = version(DEFAULT_POLICY_ID, 1)
    assert ada.post(reverse("admin:policies_policy_delete", args=[row.pk]), {"post": "yes"}).status_code == 403
    assert Policy.objects.filter(pk=row.pk).exists()


def test_activate_shows_the_diff_and_the_preview_and_acts_only_after_confirming(ada, rt):
    rt.accept("alice", {"source": "svc", "title": "routine"})
    rt.accept("alice", {"source": "svc", "title": "page me", "severity": "critical"})
    draft = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=2, rules=[]), actor="x")
    url = reverse("admin:policies_policy_activate")
    page = ada.get(url, {"ids": draft.pk}).content.decode()
    assert '<span class="diff-sub">-    &quot;max_attempts&quot;: 5,</span>' in page
    assert '<span class="diff-add">+    &quot;max_attempts&quot;: 2,</span>' in page
    assert "2 of 2 recent requests would resolve differently" in page
    assert "uns-default v1, rule critical-needs-ack" in page and "uns-default v2, rule (defaults)" in page
    assert version(DEFAULT_POLICY_ID, 2).status == DRAFT and not PolicySnapshot.objects.filter(revision=2).exists()

    assert ada.post(url, {"ids": draft.pk}).status_code == 200  # no confirm: the page again, nothing written
    assert version(DEFAULT_POLICY_ID, 2).status == DRAFT

    confirm_activation(ada, draft)
    assert version(DEFAULT_POLICY_ID, 2).status == ACTIVE
    assert PolicySnapshot.objects.get(revision=2).created_by == "ada"


def test_activating_content_identical_to_the_active_version_writes_nothing(ada):
    twin = store.clone(DEFAULT_POLICY_ID, 1, actor="x")
    page = ada.get(reverse("admin:policies_policy_activate"), {"ids": twin.pk}).content.decode()
    assert "identical to the ACTIVE version" in page and "Yes, activate" not in page
    audit = PolicyAuditRecord.objects.count()
    response = confirm_activation(ada, twin).content.decode()
    assert "same content as the ACTIVE v1: nothing activated, nothing written" in response
    assert version(DEFAULT_POLICY_ID, 2).status == DRAFT
    assert PolicySnapshot.objects.count() == 1 and PolicyAuditRecord.objects.count() == audit


def test_the_activation_page_needs_the_policy_capability(admin_client_for):
    store.ensure_initialized()
    draft = store.create_draft("billing", content(), actor="x")
    client = admin_client_for("opal", groups=("operator",))
    assert client.get(reverse("admin:policies_policy_activate"), {"ids": draft.pk}).status_code == 403
    assert confirm_activation(client, draft).status_code == 403
    assert version("billing", 1).status == DRAFT


def test_the_history_lists_every_revision_with_author_change_and_hash(ada, rt, admin_client_for):
    billing = store.create_draft("billing", content(), actor="x")
    store.activate("billing", billing.version, actor="bea")
    draft = store.create_draft(DEFAULT_POLICY_ID, content(max_attempts=2), actor="x")
    store.activate(DEFAULT_POLICY_ID, draft.version, actor="cy")
    store.retire("billing", billing.version, actor="dee")
    url = reverse("admin:policies_policysnapshot_changelist")
    page = ada.get(url).content.decode()
    for revision, author, change in ((1, "uns-bootstrap", "+uns-default v1"), (2, "bea", "+billing v1"),
                                     (3, "cy", "uns-default v1 -&gt; v2"), (4, "dee", "-billing v1")):
        snap = PolicySnapshot.objects.get(revision=revision)
        assert author in page and change in page and snap.snapshot_hash[:12] in page, revision

    only_billing = ada.get(url, {"policy": "billing"}).content.decode()
    assert "+billing v1" in only_billing and "-billing v1" in only_billing and "+uns-default v1" not in only_billing
    assert "4 policy revisions (history)" in ada.get(url, {"created": "today"}).content.decode()

    detail = ada.get(reverse("admin:policies_policysnapshot_change", args=[PolicySnapshot.objects.get(revision=3).pk]))
    text = detail.content.decode()
    assert "max_attempts&quot;: 5,</span>" in text and "diff-sub" in text
    assert "max_attempts&quot;: 2,</span>" in text and "diff-add" in text

    notification = rt.accept("alice", {"source": "svc", "title": "under four"}).notification
    superuser = admin_client_for("root", groups=(), superuser=True)
    page = superuser.get(reverse("admin:notifications_notification_change", args=[notification.id])).content.decode()
    link = reverse("admin:policies_policy_by_version", args=[DEFAULT_POLICY_ID, 2])
    assert f'href="{link}">uns-default v2 (content)</a>' in page
    landed = superuser.get(link, follow=True)
    assert landed.redirect_chain[-1][0] == reverse("admin:policies_policy_change", args=[draft.pk])
    assert "max_attempts" in landed.content.decode()
    by_revision = superuser.get(reverse("admin:policies_policysnapshot_by_revision", args=[4]), follow=True)
    assert "retire billing v1" in by_revision.content.decode()
    assert superuser.get(reverse("admin:policies_policy_by_version", args=["nope", 1])).status_code == 404


def test_the_current_revision_page_leads_to_the_history(ada):
    page = ada.get(reverse("admin:policies_policyrevision_changelist")).content.decode()
    assert reverse("admin:policies_policysnapshot_changelist") in page
    assert reverse("admin:policies_policysnapshot_by_revision", args=[1]) in page
