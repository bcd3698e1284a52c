"""``dispatch``: leased, fenced delivery in batches (DESIGN.md write-path rule 2; reference 1.1).

One scheduler, in four modules: ``claim`` (leases: claim, the lease check before each channel
attempt, release), ``window`` (the sliding window of adapter threads that runs a pass),
``failover`` (which channel of a claim comes next) and ``settle`` (one fenced transaction per
chunk of finished claims). ``docs/explanation/dispatch.md`` explains the rules and what a crash
loses at each step. The package's ``claim`` attribute is the function ``claim.claim``; import
the module by its path (``from notifications.runtime.dispatch.claim import ...``).
"""
from .claim import IN_FLIGHT, RELEASED, DispatchReport, claim, release_unattempted
from .window import dispatch

__all__ = ["IN_FLIGHT", "RELEASED", "DispatchReport", "claim", "dispatch", "release_unattempted"]
