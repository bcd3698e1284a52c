"""Django admin for the policy lifecycle. Every write calls ``policies.store`` (never a raw save):

- policy versions: list, create and edit DRAFTs (content validated field by field), actions
  activate / retire / clone / compare, and a side-by-side diff of any two versions;
- revisions: the history of snapshots, each with the notifications accepted under it;
- the lifecycle audit trail, read-only.

Lifecycle actions need ``policies.manage_policies`` (the ``policy_admin`` group).
"""
import json
import time

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from console import policies as console_policies
from core.capabilities import MANAGE_POLICIES
from core.errors import UNSError
from core.times import iso
from notifications.access import has_capability
from notifications.admin import StorableJSONField
from notifications.models import Channel

from . import selectors, store
from .content import BUILTIN_DEFAULTS, SCHEMA_VERSION, validate_content
from .editor import settings_schema
from .governance.models import GovernanceAuditRecord, GovernanceDecision
from .models import ACTIVE, DRAFT, Policy, PolicyAuditRecord, PolicyContent, PolicyRevision, PolicySnapshot
from .schemas import is_policy_id


MAX_ACTIVATE = 20  # versions one confirmation page shows (each runs the activation preview)


def _changed_settings(sample: dict) -> list[str]:
    """The effective settings a preview sample resolves differently after activation."""
    before, after = sample["before"].get("effective") or {}, sample["after"].get("effective") or {}
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def _can_manage(request) -> bool:
    return request.user.is_active and has_capability(request.user, MANAGE_POLICIES)


class ReadOnlyMixin:
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return _can_manage(request) or super().has_view_permission(request, obj)


class PrettyJSONField(StorableJSONField):
    """A JSON textarea that shows its value indented; values UNS cannot store (``1e400``, NUL)
    are form errors (``StorableJSONField``)."""

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False)


def content_problems(text: str) -> tuple[dict | None, list[dict]]:
    """Parse and validate a draft's content as typed in the editor: ``(content or None,
    [{"field", "message"}])``. The one path both the live check (``validate/``, as the admin
    types) and the form's save take: ``PrettyJSONField`` (JSON that UNS can store), then
    ``validate_content``, the content rule the store, ``/api/v1/policies`` and ``manage.py
    uns_policy`` apply."""
    try:
        content = PrettyJSONField().clean(text)
    except forms.ValidationError as exc:
        return None, [{"field": "", "message": m} for m in exc.messages]
    return content, validate_content(content)


def channel_help() -> str:
    """The channel names that exist (for the editor's help), enabled ones first."""
    rows = list(Channel.objects.order_by("-enabled", "name").values_list("name", "enabled")[:100])
    names = ", ".join(name if enabled else f"{name} (disabled)" for name, enabled in rows)
    return f"Channels that exist: {names or '(none yet)'}."


class DraftForm(forms.ModelForm):
    """Create or edit a DRAFT. ``content`` is validated with ``validate_content`` and each error
    names its field; the store validates again when it writes."""

    content = PrettyJSONField(widget=forms.Textarea(attrs={
        "rows": 28, "cols": 100, "class": "vLargeTextField policy-content-editor", "spellcheck": "false"}),
        help_text=("Policy content, schema v1: schema_version, description, priority, defaults (channels, "
                   "allowed_channels, delivery_mode GUARANTEED | BEST_EFFORT, max_attempts, backoff, "
                   "dedup_window_seconds, require_ack, ack_timeout_minutes, escalation), rules "
                   "[{name, match, set}], governance. Checked as you type; saving checks again."))
    expected_hash = forms.CharField(widget=forms.HiddenInput, required=False)

    class Meta:
        model = Policy
        fields = ["policy_id"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["content"].help_text += " " + channel_help()
        attrs = self.fields["content"].widget.attrs
        attrs["data-validate-url"] = reverse("admin:policies_policy_validate")
        attrs["data-settings-schema"] = json.dumps(settings_schema(
            list(Channel.objects.order_by("name").values_list("name", flat=True)[:100])))
        if self.instance.pk:
            _, content = selectors.get_version(self.instance.policy_id, self.instance.version)
            if content is not None:
                self.fields["content"].initial = content.content
                self.fields["expected_hash"].initial = content.content_hash

    def clean_policy_id(self):
        value = self.cleaned_data["policy_id"]
        if not is_policy_id(value):
            raise forms.ValidationError("1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        return value

    def clean_content(self):
        content = self.cleaned_data["content"]
        errors = validate_content(content)  # the rule content_problems applies as the admin types
        if errors:
            raise forms.ValidationError([f"{e['field'] or '(content)'}: {e['message']}" for e in errors])
        return content

    def validate_unique(self):
        pass  # the store allocates the version; (policy_id, version) is never a form field


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):
    list_display = ("policy_id", "version", "status", "description", "short_hash", "created_by", "created",
                    "activated", "retired", "activate_link")
    list_filter = ("status", "policy_id")
    search_fields = ("policy_id", "description")
    ordering = ("policy_id", "-version")
    actions = ["activate_selected", "retire_selected", "clone_selected", "compare_selected"]
    form = DraftForm

    class Media:
        js = ["policies/admin/policy-editor.js"]
        css = {"all": ["policies/admin/policy-editor.css"]}
    INFO = ("version", "status", "content_hash", "cloned_from", "created_by", "created", "activated_by",
            "activated", "retired_by", "retired", "links")

    # --- permissions: lifecycle rows change only through the store --------------------------

    def has_module_permission(self, request):
        return _can_manage(request) or super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return _can_manage(request) or super().has_view_permission(request, obj)

    def has_add_permission(self, request):
        return _can_manage(request)

    def has_change_permission(self, request, obj=None):
        return _can_manage(request) and (obj is None or obj.status == DRAFT)

    def has_delete_permission(self, request, obj=None):
        return False

    def has_manage_permission(self, request):
        return _can_manage(request)

    # --- columns ----------------------------------------------------------------------------

    def _content(self, obj) -> PolicyContent | None:
        return PolicyContent.objects.filter(policy_id=obj.policy_id, version=obj.version).first()

    @admin.display(description="hash")
    def short_hash(self, obj):
        content = self._content(obj)
        return content.content_hash[:12] if content else "-"

    @admin.display(description="content hash")
    def content_hash(self, obj):
        content = self._content(obj)
        return content.content_hash if content else "-"

    @admin.display(description="created")
    def created(self, obj):
        return iso(obj.created_at)

    @admin.display(description="activated")
    def activated(self, obj):
        return iso(obj.activated_at) or "-"

    @admin.display(description="retired")
    def retired(self, obj):
        return iso(obj.retired_at) or "-"

    @admin.display(description="content")
    def content_display(self, obj):
        content = self._content(obj)
        return format_html("<pre>{}</pre>", selectors.pretty(content.content if content else None))

    @admin.display(description="activate")
    def activate_link(self, obj):
        if obj.status != DRAFT:
            return "-"
        return format_html('<a class="activate-link" href="{}?ids={}">Activate…</a>',
                           reverse("admin:policies_policy_activate"), obj.pk)

    @admin.display(description="compare")
    def links(self, obj):
        others = Policy.objects.filter(policy_id=obj.policy_id).exclude(pk=obj.pk).order_by("-version")[:10]
        url = reverse("admin:policies_policy_diff")
        return format_html_join(" ", '<a href="{}?a={}&amp;b={}">v{} ({})</a>',
                                ((url, o.pk, obj.pk, o.version, o.status) for o in others)) or "-"

    # --- forms --------------------------------------------------------------------------------

    def _editable(self, request, obj) -> bool:
        return obj is not None and self.has_change_permission(request, obj)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["policy_id", "content"]
        if self._editable(request, obj):
            return ["policy_id", "content", "expected_hash", *self.INFO]
        return ["policy_id", "description", "content_display", *self.INFO]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        if self._editable(request, obj):
            return ["policy_id", *self.INFO]
        return ["policy_id", "description", "content_display", *self.INFO]

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is not None and not self._editable(request, obj):
            kwargs["form"] = forms.ModelForm  # view only: no content field to validate
        return super().get_form(request, obj, change=change, **kwargs)

    def get_changeform_initial_data(self, request):
        return {"content": {"schema_version": SCHEMA_VERSION, "description": "", "priority": 0,
                            "defaults": BUILTIN_DEFAULTS, "rules": []}}

    def save_model(self, request, obj, form, change):
        actor = request.user.get_username()
        try:
            if change:
                row = store.edit_draft(obj.policy_id, obj.version, form.cleaned_data["content"], actor=actor,
                                       expected_hash=form.cleaned_data.get("expected_hash") or None)
            else:
                row = store.create_draft(form.cleaned_data["policy_id"], form.cleaned_data["content"], actor=actor)
        except UNSError as exc:
            request._policy_store_error = exc
            return
        for field in Policy._meta.concrete_fields:
            setattr(obj, field.attname, getattr(row, field.attname))

    def save_related(self, request, form, formsets, change):
        pass  # no relations; and nothing may be written outside the store

    def _store_failed(self, request, default_url):
        exc = getattr(request, "_policy_store_error", None)
        if exc is None:
            return None
        errors = "; ".join(f"{e.get('field')}: {e.get('message')}" for e in exc.extra.get("errors", []))
        self.message_user(request, f"{exc.detail}{' (' + errors + ')' if errors else ''}", messages.ERROR)
        return HttpResponseRedirect(default_url)

    def log_addition(self, request, obj, message):
        if getattr(request, "_policy_store_error", None) is None:
            return super().log_addition(request, obj, message)

    def log_change(self, request, obj, message):
        if getattr(request, "_policy_store_error", None) is None:
            return super().log_change(request, obj, message)

    def response_add(self, request, obj, post_url_continue=None):
        return self._store_failed(request, request.path) or super().response_add(request, obj, post_url_continue)

    def response_change(self, request, obj):
        return self._store_failed(request, request.path) or super().response_change(request, obj)

    # --- lifecycle actions ----------------------------------------------------------------------

    def _each(self, request, queryset, verb, call):
        done, failed = [], []
        for row in queryset.order_by("policy_id", "version"):
            try:
                call(row)
                done.append(f"{row.policy_id} v{row.version}")
            except UNSError as exc:
                failed.append(f"{row.policy_id} v{row.version}: {exc.detail}")
        if done:
            self.message_user(request, f"{verb}: {', '.join(done)}", messages.SUCCESS)
        for message in failed:
            self.message_user(request, message, messages.ERROR)

    @admin.action(description="Activate selected DRAFT versions (shows what changes, then asks)",
                  permissions=["manage"])
    def activate_selected(self, request, queryset):
        """Never activates at once: redirects to the confirmation page (``activate_view``)."""
        ids = ",".join(queryset.order_by("policy_id", "version").values_list("pk", flat=True))
        return HttpResponseRedirect(f"{reverse('admin:policies_policy_activate')}?ids={ids}")

    @admin.action(description="Retire selected versions", permissions=["manage"])
    def retire_selected(self, request, queryset):
        actor = request.user.get_username()
        self._each(request, queryset, "Retired", lambda r: store.retire(r.policy_id, r.version, actor=actor))

    @admin.action(description="Clone selected versions to new DRAFTs", permissions=["manage"])
    def clone_selected(self, request, queryset):
        actor = request.user.get_username()
        self._each(request, queryset, "Cloned", lambda r: store.clone(r.policy_id, r.version, actor=actor))

    @admin.action(description="Compare two selected versions side by side", permissions=["view"])
    def compare_selected(self, request, queryset):
        rows = list(queryset.order_by("policy_id", "version")[:3])
        if len(rows) != 2:
            self.message_user(request, "select exactly two versions to compare", messages.WARNING)
            return None
        return HttpResponseRedirect(f"{reverse('admin:policies_policy_diff')}?a={rows[0].pk}&b={rows[1].pk}")

    # --- activation: show what changes, then ask --------------------------------------------

    def _activation_plan(self, row: Policy) -> dict:
        """One selected version on the confirmation page: the console's activation preview
        (``console.policies.activation_preview``: unified diff against the policy's ACTIVE
        version and recent requests resolved before and after) and whether activating it would
        change anything at all."""
        plan = {"row": row, "error": None, "identical_to": None, "preview": None, "samples": []}
        if row.status != DRAFT:
            plan["error"] = f"{row.status} versions cannot be activated" + (
                " (RETIRED is final: clone it to a new DRAFT)" if row.status != ACTIVE else " (it is the ACTIVE one)")
            return plan
        active = Policy.objects.filter(policy_id=row.policy_id, status=ACTIVE).first()
        if active is not None:
            mine, theirs = self._content(row), self._content(active)
            if mine is not None and theirs is not None and mine.content_hash == theirs.content_hash:
                plan["identical_to"] = active
                return plan
        try:
            preview = console_policies.activation_preview(row.policy_id, row.version)
        except UNSError as exc:
            plan["error"] = exc.detail
            return plan
        plan["preview"] = preview
        plan["diff_lines"] = [{"text": line, "kind": selectors.diff_kind(line)}
                              for line in (preview["diff"] or {}).get("lines", [])]
        plan["samples"] = [{**sample, "settings_changed": _changed_settings(sample)}
                           for sample in preview["simulation"]["samples"]]
        return plan

    def validate_view(self, request):
        """``POST content=<JSON text>``: the editor's check as the admin types, creating nothing.
        Answers ``{"valid", "errors": [{"field", "message"}], "warnings": [...]}``: ``errors``
        are what saving would refuse (``content_problems``), ``warnings`` what activation would
        (channels not configured or disabled, ``store.channel_errors``)."""
        if request.method != "POST":
            return JsonResponse({"detail": "POST the content"}, status=405)
        if not self.has_add_permission(request):
            raise PermissionDenied
        content, errors = content_problems(request.POST.get("content", ""))
        warnings = store.channel_errors(content) if content is not None and not errors else []
        return JsonResponse({"valid": not errors, "errors": errors, "warnings": warnings})

    def by_version_view(self, request, policy_id, version):
        """``version/<policy_id>/<version>/``: the page of that version and its content (where a
        notification's or a revision's ``policy_id`` / ``policy_version`` leads)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            row, _ = selectors.get_version(policy_id, version)
        except UNSError:
            raise Http404(f"no policy {policy_id} version {version}") from None
        return HttpResponseRedirect(reverse("admin:policies_policy_change", args=[row.pk]))

    def activate_view(self, request):
        """``GET ?ids=<row id>,...``: what activating each selected version changes (the diff
        against its policy's ACTIVE version, recent requests resolved before and after) and a
        confirmation form. ``POST`` with ``confirm``: activates them through ``store.activate``.

        A DRAFT whose content is identical to its policy's ACTIVE version is not activated: the
        page says so and nothing is written (no new revision, the DRAFT stays a DRAFT). The store
        itself would accept it (a new version number and revision with the same content); the
        admin declines because it would change nothing a request resolves to."""
        if not self.has_manage_permission(request):
            raise PermissionDenied
        source = request.POST if request.method == "POST" else request.GET
        ids = [i for i in (source.get("ids") or "").split(",") if i and "\x00" not in i]
        if len(ids) > MAX_ACTIVATE:
            self.message_user(request, f"activate at most {MAX_ACTIVATE} versions at a time", messages.WARNING)
            return HttpResponseRedirect(reverse("admin:policies_policy_changelist"))
        rows = list(Policy.objects.filter(pk__in=ids).order_by("policy_id", "version"))
        changelist = reverse("admin:policies_policy_changelist")
        if not rows:
            self.message_user(request, "select at least one DRAFT version to activate", messages.WARNING)
            return HttpResponseRedirect(changelist)
        plans = [self._activation_plan(row) for row in rows]
        if request.method == "POST" and source.get("confirm") == "yes":
            actor = request.user.get_username()
            for plan in plans:
                row = plan["row"]
                if plan["identical_to"] is not None:
                    self.message_user(request, f"{row.policy_id} v{row.version} has the same content as the ACTIVE "
                                      f"v{plan['identical_to'].version}: nothing activated, nothing written",
                                      messages.WARNING)
                    continue
                try:
                    result = store.activate(row.policy_id, row.version, actor=actor)
                except UNSError as exc:
                    self.message_user(request, f"{row.policy_id} v{row.version}: {exc.detail}", messages.ERROR)
                    continue
                self.message_user(request, f"Activated: {row.policy_id} v{row.version} (revision {result.revision})",
                                  messages.SUCCESS)
            return HttpResponseRedirect(changelist)
        context = {
            **self.admin_site.each_context(request),
            "title": "Activate policy versions?",
            "opts": self.model._meta,
            "plans": plans,
            "ids": ",".join(r.pk for r in rows),
            "activatable": any(p["preview"] is not None for p in plans),
        }
        return TemplateResponse(request, "admin/policies/policy/activate.html", context)

    # --- diff view ------------------------------------------------------------------------------

    def get_urls(self):
        extra = [path("diff/", self.admin_site.admin_view(self.diff_view), name="policies_policy_diff"),
                 path("activate/", self.admin_site.admin_view(self.activate_view), name="policies_policy_activate"),
                 path("validate/", self.admin_site.admin_view(self.validate_view), name="policies_policy_validate"),
                 path("version/<str:policy_id>/<int:version>/", self.admin_site.admin_view(self.by_version_view),
                      name="policies_policy_by_version")]
        return extra + super().get_urls()

    def diff_view(self, request):
        """Side-by-side diff of two versions' content: ``?a=<row id>&b=<row id>``."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        versions = list(Policy.objects.order_by("policy_id", "-version"))
        by_pk = {v.pk: v for v in versions}
        a, b = by_pk.get(request.GET.get("a")), by_pk.get(request.GET.get("b"))
        result = None
        if a is not None and b is not None:
            result = selectors.diff((a, self._content(a)), (b, self._content(b)))
        context = {
            **self.admin_site.each_context(request),
            "title": "Compare policy versions",
            "opts": self.model._meta,
            "versions": versions,
            "a": a,
            "b": b,
            "diff_table": mark_safe(result["table"]) if result else None,  # nosec B308, B703  # HtmlDiff escapes the content
            "identical": result["identical"] if result else None,
        }
        return TemplateResponse(request, "admin/policies/policy/diff.html", context)


class RevisionPolicyFilter(admin.SimpleListFilter):
    """Revisions whose ACTIVE set a policy's activation or retirement changed (the lifecycle
    audit names the revision each transition wrote)."""

    title = "policy"
    parameter_name = "policy"

    def lookups(self, request, model_admin):
        ids = PolicyAuditRecord.objects.filter(revision__isnull=False).values_list("policy_id", flat=True)
        return [(pid, pid) for pid in sorted(set(ids))]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        revisions = PolicyAuditRecord.objects.filter(policy_id=self.value(), revision__isnull=False)
        return queryset.filter(revision__in=revisions.values("revision"))


class EpochDateFilter(admin.SimpleListFilter):
    """Created today / in the past 7 or 30 days (times are epoch seconds, not date fields)."""

    title = "date"
    parameter_name = "created"
    field = "created_at"
    DAYS = {"today": 1, "7d": 7, "30d": 30, "365d": 365}

    def lookups(self, request, model_admin):
        return [("today", "Past 24 hours"), ("7d", "Past 7 days"), ("30d", "Past 30 days"), ("365d", "Past year")]

    def queryset(self, request, queryset):
        days = self.DAYS.get(self.value())
        if days is None:
            return queryset
        return queryset.filter(**{f"{self.field}__gte": time.time() - days * 86400})


@admin.register(PolicySnapshot)
class PolicySnapshotAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """The policy history: every revision (one immutable snapshot of the ACTIVE set each) with who
    wrote it, when, what changed against the revision before it, and its SHA-256."""

    list_display = ("revision", "created", "created_by", "reason", "changes", "active_set", "short_hash",
                    "notifications_link")
    list_filter = (RevisionPolicyFilter, EpochDateFilter)
    search_fields = ("reason", "created_by")
    ordering = ("-revision",)
    fields = ("revision", "reason", "snapshot_hash", "created_by", "created", "active_set", "changes",
              "notifications_link", "revision_diff", "snapshot_display")
    readonly_fields = fields

    def has_module_permission(self, request):
        return _can_manage(request) or super().has_module_permission(request)

    def get_queryset(self, request):
        previous = PolicySnapshot.objects.filter(revision=OuterRef("revision") - 1).values("snapshot")[:1]
        return super().get_queryset(request).annotate(previous_snapshot=Subquery(previous))

    @admin.display(description="what changed")
    def changes(self, obj):
        return ", ".join(selectors.revision_changes(obj.snapshot, obj.previous_snapshot)) or "(no change)"

    @admin.display(description="hash")
    def short_hash(self, obj):
        return format_html('<span title="{}">{}</span>', obj.snapshot_hash, obj.snapshot_hash[:12])

    @admin.display(description="when")
    def created(self, obj):
        return iso(obj.created_at)

    @admin.display(description="ACTIVE set (evaluation order)")
    def active_set(self, obj):
        return format_html_join(", ", '<a href="{}">{} v{}</a>', (
            (reverse("admin:policies_policy_by_version", args=[p["policy_id"], p["version"]]), p["policy_id"],
             p["version"]) for p in obj.snapshot.get("policies", [])))

    @admin.display(description="diff against the previous revision")
    def revision_diff(self, obj):
        found = selectors.revision_diff(obj)
        return format_html('<pre class="revision-diff">{}</pre>', format_html_join(
            "", '<span class="diff-{}">{}</span>', ((line["kind"], line["text"]) for line in found["lines"])))

    @admin.display(description="snapshot")
    def snapshot_display(self, obj):
        return format_html("<pre>{}</pre>", selectors.pretty(obj.snapshot))

    @admin.display(description="notifications")
    def notifications_link(self, obj):
        url = reverse("admin:policies_policysnapshot_notifications", args=[obj.pk])
        return format_html('<a href="{}">accepted under revision {}</a>', url, obj.revision)

    def get_urls(self):
        extra = [path("<str:object_id>/notifications/", self.admin_site.admin_view(self.notifications_view),
                      name="policies_policysnapshot_notifications"),
                 path("revision/<int:revision>/", self.admin_site.admin_view(self.by_revision_view),
                      name="policies_policysnapshot_by_revision")]
        return extra + super().get_urls()

    def by_revision_view(self, request, revision):
        """``revision/<n>/``: the page of revision ``n`` (where a notification's revision leads)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        snap = PolicySnapshot.objects.filter(revision=revision).first()
        if snap is None:
            raise Http404("no such revision")
        return HttpResponseRedirect(reverse("admin:policies_policysnapshot_change", args=[snap.pk]))

    def notifications_view(self, request, object_id):
        """The notifications accepted under this snapshot's revision (first 200 by id)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        snap = PolicySnapshot.objects.filter(pk=object_id).first() if "\x00" not in object_id else None
        if snap is None:
            raise Http404("no such revision")
        rows, total = selectors.notifications_under_revision(snap.revision)
        items = [{
            "id": r.id,
            "url": reverse("admin:notifications_notification_change", args=[r.id]),
            "status": r.status,
            "source": r.notification.get("source"),
            "title": r.notification.get("title"),
            "policy": "{policy_id} v{policy_version}".format(
                policy_id=r.notification["metadata"]["uns_resolution"].get("policy_id"),
                policy_version=r.notification["metadata"]["uns_resolution"].get("policy_version") or "?"),
            "rule": r.notification["metadata"]["uns_resolution"].get("rule"),
            "accepted": iso(r.notification.get("created_at")),
        } for r in rows]
        context = {
            **self.admin_site.each_context(request),
            "title": f"Notifications accepted under revision {snap.revision}",
            "opts": self.model._meta,
            "snapshot": snap,
            "items": items,
            "total": total,
        }
        return TemplateResponse(request, "admin/policies/policysnapshot/notifications.html", context)


@admin.register(PolicyRevision)
class PolicyRevisionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """The one current revision; every revision is in the history (``PolicySnapshotAdmin``)."""

    list_display = ("revision", "updated_by", "updated", "history")

    @admin.display(description="history")
    def history(self, obj):
        return format_html('<a href="{}">revision {}</a> · <a href="{}">every revision</a>',
                           reverse("admin:policies_policysnapshot_by_revision", args=[obj.revision]), obj.revision,
                           reverse("admin:policies_policysnapshot_changelist"))

    def has_module_permission(self, request):
        return _can_manage(request) or super().has_module_permission(request)

    @admin.display(description="updated")
    def updated(self, obj):
        return iso(obj.updated_at)


@admin.register(PolicyAuditRecord)
class PolicyAuditRecordAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("when", "action", "policy_id", "version", "from_status", "to_status", "actor", "revision")
    list_filter = ("action", "policy_id")
    search_fields = ("policy_id", "actor")
    ordering = ("-at", "-id")

    def has_module_permission(self, request):
        return _can_manage(request) or super().has_module_permission(request)

    @admin.display(description="at", ordering="at")
    def when(self, obj):
        return iso(obj.at)


class ApproverFilter(admin.SimpleListFilter):
    """Decisions an approver counted an approval on or settled (the governance audit's actors of
    ``APPROVAL_RECORDED`` and ``SETTLED``)."""

    title = "approver"
    parameter_name = "approver"
    KINDS = ("APPROVAL_RECORDED", "SETTLED")

    def lookups(self, request, model_admin):
        actors = GovernanceAuditRecord.objects.filter(kind__in=self.KINDS).exclude(actor="uns-timeout-worker")
        return [(a, a) for a in sorted(set(actors.values_list("actor", flat=True)))[:200]]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        ids = GovernanceAuditRecord.objects.filter(kind__in=self.KINDS, actor=self.value()).values("decision_id")
        return queryset.filter(id__in=ids)


class DecisionDateFilter(EpochDateFilter):
    pass


@admin.register(GovernanceDecision)
class GovernanceDecisionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Governance decisions, read-only: who asked for what, what the rules said, who approved,
    under which policy revision; each with its approval notifications and its audit trail.
    Decisions change only through ``policies.governance`` (decide, approve, expire)."""

    list_display = ("created", "action", "agent_id", "principal", "risk", "outcome", "state", "approvers",
                    "rule", "revision_link", "approval_links")
    list_filter = ("state", "outcome", "agent_id", "action", ApproverFilter, "revision", DecisionDateFilter)
    search_fields = ("id", "action", "agent_id", "principal", "resource")
    ordering = ("-created_at", "-id")
    fields = ("id", "created", "principal", "agent_id", "autonomy_mode", "action", "intent", "resource", "risk",
              "reason", "outcome", "rule", "state", "approvals_required", "approvers", "decided_by", "decided",
              "approval_links", "policy_link", "revision_link", "snapshot_hash", "request_display", "audit_trail")
    readonly_fields = fields

    def has_module_permission(self, request):
        return _can_manage(request) or super().has_module_permission(request)

    @admin.display(description="when", ordering="created_at")
    def created(self, obj):
        return iso(obj.created_at)

    @admin.display(description="settled")
    def decided(self, obj):
        return iso(obj.decided_at) or "-"

    @admin.display(description="approved by")
    def approvers(self, obj):
        return ", ".join(obj.approved_by or []) or "-"

    @admin.display(description="approval notifications")
    def approval_links(self, obj):
        return format_html_join(" ", '<a class="approval-link" href="{}">{}</a>', (
            (reverse("admin:notifications_notification_change", args=[nid]), nid[:8]) for nid in obj.approval_ids
        )) or "-"

    @admin.display(description="revision", ordering="revision")
    def revision_link(self, obj):
        return format_html('<a href="{}">{}</a>', reverse("admin:policies_policysnapshot_by_revision",
                                                          args=[obj.revision]), obj.revision)

    @admin.display(description="policy")
    def policy_link(self, obj):
        if not obj.policy_id or not obj.policy_version:
            return "-"
        return format_html('<a href="{}">{} v{}</a>', reverse("admin:policies_policy_by_version",
                                                              args=[obj.policy_id, obj.policy_version]),
                           obj.policy_id, obj.policy_version)

    @admin.display(description="request")
    def request_display(self, obj):
        return format_html("<pre>{}</pre>", selectors.pretty(obj.request))

    @admin.display(description="audit trail")
    def audit_trail(self, obj):
        rows = GovernanceAuditRecord.objects.filter(decision_id=obj.id).order_by("at", "id")
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{} {} {} -> {} by {}</li>", (
            (iso(r.at), r.kind, r.old_state or "-", r.new_state, r.actor) for r in rows)))
