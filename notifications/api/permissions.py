"""Capability checks: every view names the Django permission each method needs, and fails closed.

A view declares ``capabilities = {"POST": SEND, ...}`` (the capabilities are named once, in
``core.capabilities``). A method not listed is refused (403) even for authenticated users,
so a forgotten declaration can never open a mutation; ``tests/api/test_capabilities.py`` walks
the URLconf to prove it.
"""
from rest_framework.permissions import BasePermission

from notifications.access import has_capability


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
        return has_capability(request.user, needed)
