"""Fixtures for the MCP transport tests: a fresh database per module, principals with real
knox tokens, and one HTTP ``mcp_server`` process per module (stdio servers are per client)."""
import pytest
from mcp_harness import fresh_database, http_client_session, start_http_server, stdio_client_session


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def mcp_db():
    """A migrated database with principals: ``agent`` (producer + responder), ``producer``
    (producer only), ``reader`` (console read only) and ``olga`` (operator)."""
    with fresh_database() as db:
        db.principal("agent", "producer,responder")
        db.principal("producer", "producer")
        db.principal("reader", "console")
        db.principal("olga", "operator")
        yield db


@pytest.fixture(scope="module")
def http_server(mcp_db):
    server = start_http_server(mcp_db)
    yield server
    assert server.stop() == 0, server.log_text()


@pytest.fixture(params=["stdio", "http"])
def transport(request):
    return request.param


@pytest.fixture
def connect(transport, mcp_db, request):
    """``connect(principal_name)``: an SDK client session over the parametrized transport."""

    def open_session(name):
        token = mcp_db.tokens[name]
        if transport == "stdio":
            return stdio_client_session(mcp_db, token)
        return http_client_session(request.getfixturevalue("http_server").url, token)

    return open_session
