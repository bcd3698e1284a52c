"""A method a route does not implement is 405 problem details with ``Allow`` for everyone (even a
principal with every capability), never 403: the capability check only guards real handlers."""
import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("method, path", [
    ("put", "/api/v1/notifications/{id}"),
    ("get", "/api/v1/notifications/{id}/ack"),
    ("patch", "/api/v1/dlq/{id}"),
    ("delete", "/api/v1/notifications"),
    ("get", "/api/v1/runtime/notifications/{id}/replay"),
    ("get", "/api/v1/dlq/{id}/replay"),
    ("delete", "/api/v1/dlq/{id}/resolve"),
    ("post", "/api/v1/dlq/{id}"),
])
def test_unimplemented_method_is_405(api, rt, monkeypatch, method, path):
    from django.apps import apps

    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    client = api(groups=("producer", "responder", "operator", "console"))
    nid = rt.accept(client.principal, {"source": "s", "title": "t"}).notification.id
    response = getattr(client, method)(path.format(id=nid), data={}, format="json")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "method_not_allowed"
    assert method.upper() not in response["Allow"]


def test_unimplemented_method_without_credentials_is_still_401(client):
    response = client.put("/api/v1/notifications/x", data={}, content_type="application/json")
    assert response.status_code == 401
