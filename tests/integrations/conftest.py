"""The compatible intakes (notifications/integrations/) are API views: the API fixtures apply."""
from api.conftest import api_rt  # noqa: F401  (a fixture, used by name)
