"""Every WebSocket route fails closed, proved over ``websocket_urlpatterns``: its consumer
names an existing permission as ``capability``; without credentials it closes 4401, for a
principal without that capability 4403, and a principal holding only that capability gets in."""
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import URLPattern

from notifications.routing import websocket_urlpatterns

from .helpers import close_code, socket, sync

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


def ws_routes():
    found = []
    for pattern in websocket_urlpatterns:
        assert isinstance(pattern, URLPattern), pattern
        found.append(("/" + str(pattern.pattern), pattern.callback.consumer_class))
    return found


def test_the_walk_finds_every_socket_and_each_names_a_known_capability(db):
    known = {f"{app}.{codename}" for app, codename in
             Permission.objects.values_list("content_type__app_label", "codename")}
    routes = dict(ws_routes())
    assert set(routes) == {"/ws/timeline/", "/ws/respond/"}
    for path, consumer in routes.items():
        assert consumer.capability in known, (path, consumer.capability)
    assert routes["/ws/timeline/"].capability == "notifications.view_console"
    assert routes["/ws/respond/"].capability == "notifications.respond_notification"


def holder_of(codename_path: str):
    """A principal whose only permission is ``codename_path``; returns its token."""
    from knox.models import AuthToken

    app, codename = codename_path.split(".")
    user = get_user_model().objects.create(username=f"only-{codename}")
    user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=codename))
    return AuthToken.objects.create(user=user, expiry=None)[1]


@pytest.mark.parametrize("path,consumer", ws_routes())
async def test_each_socket_fails_closed(layer, make_principal, path, consumer):
    async with socket(path) as comm:
        assert await close_code(comm) == 4401
    _, nobody = await sync(make_principal, "ws-nobody", ())
    async with socket(path, token=nobody) as comm:
        assert await close_code(comm) == 4403
    holder = await sync(holder_of, consumer.capability)
    async with socket(path, token=holder) as comm:
        assert comm.accepted
        assert await comm.receive_nothing(timeout=0.2)  # open: not closed
