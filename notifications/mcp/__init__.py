"""The MCP transport: UNS tools on the official ``mcp`` SDK (``MCPServer``), served over stdio
or streamable HTTP by ``manage.py mcp_server``. Tools are thin: authenticate the principal, check
its capability, call the runtime or a selector (``server.py``; identity in ``auth.py``)."""
