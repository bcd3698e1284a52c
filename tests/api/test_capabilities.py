"""Capabilities fail closed, proved over the whole URLconf; secrets never leave the server.

Walks ``django.urls.get_resolver()`` recursively: every ``/api/v1/`` view is a DRF view guarded
by ``HasCapability`` that names a capability (an existing Django permission) for each method it
implements, and an authenticated principal with no groups gets 403 (never 2xx) on every mutation
(and every read) of every route. ``/ui/`` views implement no mutation (INV-UI-001). A mutation
that deliberately needs no capability (login, logout) must be listed, with its reason, in
``NO_CAPABILITY``; a route that refuses in a foreign error shape in ``FOREIGN_REFUSAL``.
"""
import json
import logging
import re

import httpx
import pytest
from django.contrib.auth.models import Permission
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from notifications.adapters.console import ConsoleAdapter
from notifications.adapters.webhook import WebhookAdapter
from notifications.api.permissions import HasCapability
from notifications.models import AckAuditRecord, Event, Notification, NotificationAuditRecord

from .helpers import row_counts, submit

pytestmark = pytest.mark.django_db

MUTATIONS = ("POST", "PUT", "PATCH", "DELETE")
METHODS = ("GET", *MUTATIONS)
SECRET = "s3cret-signing-key"

# Mutations that deliberately need no capability (their view declares ``None``). Reviewed here:
# a new ``None`` declaration fails the walk until it is added with its reason.
NO_CAPABILITY = {
    ("api/v1/auth/login", "POST"): "issues a token for the credentials given; needs the console capability inside",
    ("api/v1/auth/logout", "POST"): "revokes the caller's own token",
}
# Routes that answer in a foreign error shape instead of problem details, and their refusal status.
FOREIGN_REFUSAL = {
    # PagerDuty Events API v2: every refusal is 400 (PagerDuty clients do not retry a 400).
    "api/v1/integrations/pagerduty/v2/enqueue": 400,
    "api/v1/integrations/pagerduty/v2/change/enqueue": 400,
}


def walk(patterns, prefix=""):
    """``(route, URLPattern)`` for every leaf of the URLconf, resolvers followed recursively."""
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from walk(p.url_patterns, route)
        else:
            assert isinstance(p, URLPattern)
            yield route, p


def routes(*prefixes: str):
    return [(route, p) for route, p in walk(get_resolver().url_patterns) if route.startswith(prefixes)]


def view_class(pattern):
    return getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)


def concrete(route: str, value: str) -> str:
    """The route as a path, every converter filled in (``<int:x>`` with 1, others with ``value``)."""
    path = re.sub(r"<int:\w+>", "1", route)
    path = re.sub(r"<(?:\w+:)?\w+>", value, path)
    path = re.sub(r"\(\?P<\w+>[^)]*\)", value, path)
    return "/" + path.lstrip("^").rstrip("$")


def test_the_walk_finds_every_api_route():
    found = {route for route, _ in routes("api/v1/")}
    assert {
        "api/v1/notifications",
        "api/v1/notifications/<str:notification_id>",
        "api/v1/notifications/<str:notification_id>/ack",
        "api/v1/notifications/<str:notification_id>/dismiss",
        "api/v1/runtime/notifications/<str:notification_id>/replay",
        "api/v1/dlq",
        "api/v1/dlq/<str:notification_id>",
        "api/v1/dlq/<str:notification_id>/replay",
        "api/v1/dlq/<str:notification_id>/resolve",
    } <= found


def test_every_api_view_declares_a_capability_for_each_method_it_implements():
    known = {f"{app}.{codename}" for app, codename in
             Permission.objects.values_list("content_type__app_label", "codename")}
    problems = []
    for route, pattern in routes("api/v1/", "ui/"):
        cls = view_class(pattern)
        if cls is None or not issubclass(cls, APIView):
            problems.append(f"{route}: not a DRF view ({pattern.callback!r})")
            continue
        declared = getattr(cls, "capabilities", {})
        allowed = [m.upper() for m in cls.http_method_names]
        implemented = [m for m in METHODS if hasattr(cls, m.lower()) and m in allowed]
        exempt = [m for m in implemented if (route, m) in NO_CAPABILITY]
        if set(exempt) != set(implemented) and not any(issubclass(p, HasCapability) for p in cls.permission_classes):
            problems.append(f"{route}: {cls.__name__} is not guarded by HasCapability")
        if route.startswith("ui/") and set(implemented) & set(MUTATIONS):
            problems.append(f"{route}: {cls.__name__} implements a mutation under /ui/ (INV-UI-001)")
        for method in implemented:
            if method not in declared:
                problems.append(f"{route}: {cls.__name__}.{method.lower()} declares no capability")
                continue
            needed = declared[method]
            if needed is None:
                if (route, method) not in NO_CAPABILITY:
                    problems.append(f"{route}: {cls.__name__}.{method.lower()} needs no capability: review it and "
                                    f"add it to NO_CAPABILITY")
                continue
            for perm in (needed,) if isinstance(needed, str) else needed:
                if perm not in known:
                    problems.append(f"{route}: {cls.__name__} {method} names unknown permission {perm!r}")
        for method in declared:
            if method not in ("GET", "HEAD", *MUTATIONS):
                problems.append(f"{route}: {cls.__name__} declares an unexpected method {method!r}")
    assert not problems, "\n".join(problems)


@pytest.fixture
def existing_id(api, api_rt, channel):
    """A real notification, so a refusal below can never be a 404 in disguise."""
    nid = submit(api(groups=("producer",)), require_ack=True)["id"]
    api_rt.dispatch()
    return nid


def test_a_principal_without_groups_is_refused_everything(make_principal, api_rt, existing_id):
    _, token = make_principal("nobody", groups=())
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    # ``routing_key`` authenticates the PagerDuty endpoint; everywhere else it is never read.
    body = json.dumps({"source": "s", "title": "t", "routing_key": token, "event_action": "trigger"})
    before = row_counts()
    checked, wrong = 0, []
    for route, pattern in routes("api/v1/", "ui/"):
        path = concrete(route, existing_id)
        cls = view_class(pattern)
        for method in METHODS:
            if (route, method) in NO_CAPABILITY:
                continue
            response = client.generic(method, path, body, content_type="application/json")
            checked += 1
            status = response.status_code
            implemented = hasattr(cls, method.lower()) and method.lower() in cls.http_method_names
            if route in FOREIGN_REFUSAL:
                ok = status == (FOREIGN_REFUSAL[route] if implemented else 405)
            elif status == 405:
                ok = not implemented  # /ui/ refuses writes even before authentication (INV-UI-001)
            else:
                ok = status == 403 and response.json().get("code") == "permission_denied"
            if not ok or 200 <= status < 300:
                wrong.append(f"{method} {path} -> {status} {response.content[:200]!r}")
    assert not wrong, "\n".join(wrong)
    assert checked >= 7 * len(METHODS)
    assert row_counts() == before


def test_has_capability_fails_closed_for_an_undeclared_method():
    """Even a superuser (every permission) is refused a method its view implements but forgot to
    declare (403); methods the view does not implement are 405, and nothing runs."""
    from django.contrib.auth import get_user_model
    from rest_framework.response import Response

    class Half(APIView):
        permission_classes = [HasCapability]
        capabilities = {"GET": "notifications.view_console"}

        def get(self, request):
            return Response({"ok": True})

        def post(self, request):
            raise AssertionError("an undeclared method must never run")

    root = get_user_model().objects.create_superuser("root", password=None)
    factory = APIRequestFactory()
    request = factory.post("/x", {}, format="json")
    force_authenticate(request, user=root)
    assert Half.as_view()(request).status_code == 403
    for method in ("put", "patch", "delete"):
        request = getattr(factory, method)("/x", {}, format="json")
        force_authenticate(request, user=root)
        assert Half.as_view()(request).status_code == 405, method
    request = factory.get("/x")
    force_authenticate(request, user=root)
    assert Half.as_view()(request).status_code == 200


# --- secrets -------------------------------------------------------------------------------

def test_secrets_never_appear_in_responses_events_or_logs(api, make_principal, clock, channel, monkeypatch,
                                                           caplog):
    from django.apps import apps
    from notifications.runtime import Runtime

    received = []

    def receiver(request: httpx.Request) -> httpx.Response:
        received.append(request)
        # Fail the first delivery of the DLQ-bound notification until it is dead-lettered.
        body = json.loads(request.content)
        if body["title"] == "doomed" and body["cycle"] == 1:
            return httpx.Response(503, text=f"upstream down (echoing nothing of {len(request.content)} bytes)")
        return httpx.Response(200)

    rt = Runtime(clock=clock, adapters={"webhook": WebhookAdapter(transport=httpx.MockTransport(receiver)),
                                        "console": ConsoleAdapter(clock)},
                 callback=None, concurrency=1, rng=lambda: 0.5)
    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    caplog.set_level(logging.DEBUG)

    tokens = []

    def client(groups, name):
        _, token = make_principal(name, groups)
        tokens.append(token)
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return c

    producer = client(("producer",), "svc")
    responder = client(("responder",), "bob")
    operator = client(("operator",), "olga")
    answers = []

    def call(c, method, path, body=None):
        response = c.generic(method, path, json.dumps(body) if body is not None else "",
                             content_type="application/json")
        answers.append(response)
        return response

    acked = call(producer, "POST", "/api/v1/notifications",
                 {"source": "svc", "title": "fine", "channels": ["ops-hook"], "require_ack": True}).json()["id"]
    doomed = call(producer, "POST", "/api/v1/notifications",
                  {"source": "svc", "title": "doomed", "channels": ["ops-hook"]}).json()["id"]
    for _ in range(10):
        rt.dispatch()
        clock.advance(3600)
    call(responder, "POST", f"/api/v1/notifications/{acked}/ack", {"metadata": {"by": "bob"}})
    call(responder, "POST", f"/api/v1/notifications/{acked}/dismiss")  # 409 ack_conflict
    call(operator, "GET", "/api/v1/dlq")
    call(operator, "GET", f"/api/v1/notifications/{doomed}")
    call(operator, "POST", f"/api/v1/dlq/{doomed}/replay")
    rt.dispatch()
    call(operator, "POST", f"/api/v1/dlq/{doomed}/resolve")  # 409 not_dead_lettered
    for nid in (acked, doomed):
        call(producer, "GET", f"/api/v1/notifications/{nid}")
    console = client(("operator", "console"), "console-carl")
    for route, _ in routes("api/v1/", "ui/"):  # every read the console or an operator can make
        for nid in (acked, doomed):
            call(console, "GET", concrete(route, nid))
    call(APIClient(), "GET", f"/api/v1/notifications/{acked}")  # 401
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens[0][:-4]}beef")
    call(wrong, "GET", f"/api/v1/notifications/{acked}")  # 401

    # The secret was in play: every delivery was signed with it.
    assert received and all(r.headers["webhook-signature"].startswith("v1,") for r in received)
    assert Notification.objects.get(id=doomed).status == "DELIVERED"
    assert {r.status_code for r in answers} >= {200, 202, 401, 409}
    assert sum(r.status_code == 200 for r in answers) >= 10  # the reads above did read something

    needles = [SECRET, *tokens]
    haystacks = {f"response {r.request['REQUEST_METHOD']} {r.request['PATH_INFO']}": r.content.decode()
                 for r in answers}
    haystacks["response headers"] = json.dumps([dict(r.headers) for r in answers])
    haystacks["webhook bodies"] = json.dumps([r.content.decode() for r in received])
    haystacks["uns_events"] = json.dumps(list(Event.objects.values("payload", "callback_error")))
    haystacks["uns_notifications"] = json.dumps(list(Notification.objects.values(
        "notification", "outcome", "response_metadata", "principal", "actor")))
    haystacks["audit"] = json.dumps([list(NotificationAuditRecord.objects.values()),
                                     list(AckAuditRecord.objects.values("ack_metadata", "acked_by"))])
    haystacks["logs"] = "\n".join(r.getMessage() for r in caplog.records)
    leaks = [f"{where} contains {needle[:6]}..." for where, text in haystacks.items() for needle in needles
             if needle in text]
    assert not leaks, leaks
