"""Pre-execution action gating (architecture, "Maintenance and boundaries"): an agent asks UNS
whether it may perform an action; UNS answers from the governance rules of the ACTIVE policy
revision (``DecisionEngine``); where a human must approve, the question becomes a ``require_ack``
notification (``GovernanceApprovalBridge``) that a responder ACKs (approve) or dismisses (deny),
and no answer in time denies.

Python API: ``decide(action, context) -> Decision``, ``get_decision(id)``. Transports:
``POST /api/v1/governance/decisions``, ``GET /api/v1/governance/decisions/{id}``, the MCP tools
``request_approval`` and ``check_approval``. See README, "Governance".

Imports are lazy (PEP 562) so ``policies.content`` can validate a governance block without
loading the ORM models.
"""

__all__ = ["decide", "get_decision", "Decision", "DecisionEngine", "GovernanceApprovalBridge", "Verdict"]


def __getattr__(name):
    if name in ("decide", "get_decision", "Decision", "decide_request"):
        from . import service

        return getattr(service, name)
    if name in ("DecisionEngine", "Verdict"):
        from . import engine

        return getattr(engine, name)
    if name == "GovernanceApprovalBridge":
        from .bridge import GovernanceApprovalBridge

        return GovernanceApprovalBridge
    raise AttributeError(name)
