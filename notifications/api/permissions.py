"""Capability checks: every view names the Django permission each method needs, and fails closed.

A view declares ``capabilities = {"POST": "notifications.send_notification", ...}``. A method not
listed is refused (403) even for authenticated users, so a forgotten declaration can never open a
mutation; ``tests/api/test_capabilities.py`` walks the URLconf to prove it.
"""
from django.contrib.auth.models import Permission
from rest_framework.permissions import BasePermission

SEND = "notifications.send_notification"
RESPOND = "notifications.respond_notification"
OPERATE_DLQ = "notifications.operate_dlq"
VIEW_CONSOLE = "notifications.view_console"


def load_capabilities(user) -> None:
    """Resolve ``user``'s permissions (its own and its groups') in one query and keep them on the
    user object, where Django's ``ModelBackend.has_perm`` looks first (``_perm_cache``), so every
    ``has_perm`` of this request or message costs nothing more. ``ModelBackend`` alone would read
    user and group permissions in two queries. Superusers and inactive users need no query
    (``User.has_perm`` answers for them before any backend). Read per request, never across
    requests: a capability removed takes effect on the next request or message."""
    if not user.is_active or user.is_superuser or hasattr(user, "_perm_cache"):
        return
    own = Permission.objects.filter(user=user).order_by().values_list("content_type__app_label", "codename")
    via_groups = Permission.objects.filter(group__user=user).order_by().values_list("content_type__app_label", "codename")
    user._perm_cache = {f"{app}.{codename}" for app, codename in own.union(via_groups)}


class HasCapability(BasePermission):
    message = "your principal lacks the capability this action needs"

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method == "OPTIONS":
            return True
        if not hasattr(view, request.method.lower()):
            return True  # the view has no handler: DRF answers 405 Method Not Allowed, nothing runs
        needed = getattr(view, "capabilities", {}).get(request.method)
        if needed is None and request.method == "HEAD":
            needed = getattr(view, "capabilities", {}).get("GET")
        if needed is None:
            return False
        if isinstance(needed, str):
            needed = (needed,)
        load_capabilities(request.user)
        return any(request.user.has_perm(p) for p in needed)
