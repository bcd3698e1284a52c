"""Pre-execution action gating (architecture, "Maintenance and boundaries"): an agent asks UNS
whether it may perform an action; UNS answers from the governance rules of the ACTIVE policy
revision (``DecisionEngine``); where a human must approve, the question becomes a ``require_ack``
notification (``GovernanceApprovalBridge``) that a responder ACKs (approve) or dismisses (deny),
and no answer in time denies.

Python API: ``decide(action, context) -> Decision``, ``get_decision(id)``. Transports:
``POST /api/v1/governance/decisions``, ``GET /api/v1/governance/decisions/{id}``, the MCP tools
``request_approval`` and ``check_approval``. See README, "Governance".

Imports are lazy (PEP 562): ``policies.content`` imports ``policies.governance.schema``, which
loads this package, and the service below builds on the runtime, which builds on
``policies.content``.
"""

__all__ = ["decide", "get_decision", "Decision", "DecisionEngine", "GovernanceApprovalBridge", "Verdict"]


def __getattr__(name):
    if name in ("decide", "get_decision", "Decision", "decide_request"):
        from . import service  # lazy: see the module docstring

        return getattr(service, name)
    if name in ("DecisionEngine", "Verdict"):
        from . import engine  # lazy: see the module docstring

        return getattr(engine, name)
    if name == "GovernanceApprovalBridge":
        from .bridge import GovernanceApprovalBridge  # lazy: see the module docstring

        return GovernanceApprovalBridge
    raise AttributeError(name)
