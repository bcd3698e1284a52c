"""``manage.py mcp_server``: UNS's MCP tools over stdio or streamable HTTP.

    mcp_server [--transport stdio|http] [--host 127.0.0.1] [--port 8001] [--no-worker]
               [--token-file PATH] [--poll-interval SECONDS]

stdio acts for one principal: its knox token comes from ``UNS_MCP_TOKEN`` or ``--token-file``
(never argv, where other users could read it) and the command refuses to start unless the token
verifies. HTTP authenticates every request's ``Authorization: Bearer <token>``. Unless
``--no-worker``, the server runs the dispatch, timeout and callback loops for its lifetime;
SIGTERM/SIGINT (or, over stdio, the client closing stdin) stops them gracefully.
"""
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from notifications.management.secret_input import RefuseOnArgv, read_secret
from notifications.mcp import serve
from notifications.mcp.auth import HttpIdentity, StdioIdentity, authenticate_token
from notifications.mcp.server import build_server
from notifications.runtime import UNSError

TOKEN_ENV = "UNS_MCP_TOKEN"


class Command(BaseCommand):
    help = "Serve the UNS MCP tools over stdio or streamable HTTP (with the worker loops unless --no-worker)."

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # No prefix matching: "--token SECRET" must be refused, not read as --token-file.
        parser.allow_abbrev = False
        return parser

    def add_arguments(self, parser):
        parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address")
        parser.add_argument("--port", type=int, default=8001, help="HTTP port")
        parser.add_argument("--no-worker", action="store_true",
                            help="do not run the dispatch/timeout/callback loops in this process")
        parser.add_argument("--token-file", default=None,
                            help=f"stdio: file holding the principal's API token (else ${TOKEN_ENV})")
        parser.add_argument("--token", action=RefuseOnArgv, instead=f"${TOKEN_ENV} or --token-file PATH")
        parser.add_argument("--poll-interval", type=float, default=None, help="seconds a worker loop idles")

    def handle(self, *args, transport, host, port, no_worker, token_file, poll_interval, **opts):
        options = {"with_worker": not no_worker, "poll_interval": poll_interval}
        if transport == "stdio":
            token = self._stdio_token(token_file)
            try:
                user = authenticate_token(token)
            except UNSError as exc:
                raise CommandError(f"refusing to start: {exc.detail} ({exc.code})")
            finally:
                connections.close_all()  # tools and loops use their own threads' connections
            # stdout is the MCP wire: everything human goes to stderr.
            self.stderr.write(f"uns mcp server (stdio) acting for {user.get_username()}")
            serve.run_stdio(build_server(StdioIdentity(token), **options))
        else:
            if token_file:
                raise CommandError("--token-file is for stdio; HTTP clients send Authorization: Bearer <token>")
            self.stderr.write(f"uns mcp server (streamable HTTP) on http://{host}:{port}/mcp")
            serve.run_http(build_server(HttpIdentity(), host=host, port=port, **options), host=host, port=port)
        self.stderr.write("uns mcp server stopped")

    def _stdio_token(self, token_file: str | None) -> str:
        """The token from ``--token-file`` or ``$UNS_MCP_TOKEN`` (``secret_input``'s rule: the
        first line); never stdin, which is the MCP wire."""
        try:
            return read_secret(what="API token", path=token_file, env=TOKEN_ENV,
                               hint=f"set {TOKEN_ENV} or pass --token-file")
        except CommandError as exc:
            raise CommandError(f"refusing to start: {exc}")
