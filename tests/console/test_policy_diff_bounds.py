"""Policy diff versions beyond a database integer are a 400 problem, not a 500."""
import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("to", ["9223372036854775808", "0", "-1", "abc"])
def test_out_of_range_versions_are_refused(api, to):
    client = api(groups=("console",))
    response = client.get(f"/ui/policies/uns-default/diff?from=1&to={to}")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "to"
