"""An accessibility check for the browser tests: axe-core (the npm package, a devDependency of
frontend/, ``npm install`` brings it) run over the page as it is on screen.

    from .axe import assert_accessible
    ...
    assert_accessible(page, context="inbox with 3 pending ACKs")

fails the test on any violation of impact ``critical`` or ``serious`` (WCAG 2.x A/AA and axe's
best practices, axe's default rule set), listing each rule's id, impact, help text and the CSS
selectors of the offending elements. Milder findings (``moderate``, ``minor``) are returned, not
failed on.

How it gets into a page under the console's Content-Security-Policy (``script-src 'self'``, no
inline script): ``page.evaluate(source)`` goes through the DevTools protocol, which the page's CSP
does not govern (as ``@axe-core/playwright`` does), so the browser context needs no
``bypass_csp=True`` and the tests keep running under the console's real CSP (a console that broke
its own policy still fails them). ``page.add_script_tag(content=...)`` would be refused by that CSP;
use it only in a context created with ``bypass_csp=True``.
"""
from functools import cache
from pathlib import Path

AXE_JS = Path(__file__).resolve().parents[2] / "frontend" / "node_modules" / "axe-core" / "axe.min.js"

#: The impacts that fail the check (axe's four levels are critical, serious, moderate, minor).
FAILING = ("critical", "serious")

_RUN = """async ([include, exclude]) => {
    const context = include === null && exclude === null ? document
        : {include: include === null ? [document] : include.map(s => [s]), exclude: (exclude || []).map(s => [s])};
    const result = await window.axe.run(context, {resultTypes: ["violations"]});
    return result.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
        nodes: v.nodes.map(n => ({target: n.target.map(String), summary: n.failureSummary || ""})),
    }));
}"""


@cache
def _source() -> str:
    if not AXE_JS.is_file():
        raise AssertionError(f"{AXE_JS} is missing: run `npm install` in frontend/ (axe-core is a devDependency)")
    return AXE_JS.read_text()


def violations(page, *, include: list[str] | None = None, exclude: list[str] | None = None) -> list[dict]:
    """Every axe-core violation on ``page`` now: ``[{id, impact, help, helpUrl, nodes: [{target:
    [selector, ...], summary}]}]``. ``include``/``exclude`` are CSS selectors limiting the run (default:
    the whole document). axe is injected once per document (again after a navigation)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_source())  # DevTools-protocol evaluation: not subject to the page's CSP
    return page.evaluate(_RUN, [include, exclude])


def format_violations(found: list[dict]) -> str:
    """One block per rule: ``rule-id (impact): help`` then each target selector and axe's summary."""
    lines = []
    for v in found:
        lines.append(f"- {v['id']} ({v['impact']}): {v['help']} [{v['helpUrl']}]")
        for node in v["nodes"]:
            summary = " ".join(node["summary"].split())
            lines.append(f"    {' '.join(node['target'])}: {summary}")
    return "\n".join(lines)


def assert_accessible(page, *, context: str, include: list[str] | None = None,
                      exclude: list[str] | None = None) -> list[dict]:
    """Fail if axe-core finds a ``critical`` or ``serious`` violation on ``page`` as it is now.

    ``context`` names what is on screen (``"DLQ with 2 dead letters"``) for the failure message;
    call it once the view shows its data (an empty list checks little). Returns the milder
    (``moderate``/``minor``) violations, which do not fail."""
    found = violations(page, include=include, exclude=exclude)
    failing = [v for v in found if v["impact"] in FAILING]
    assert not failing, (f"axe-core: {len(failing)} critical/serious violation(s) on {context} "
                         f"({page.url}):\n{format_violations(failing)}")
    return [v for v in found if v["impact"] not in FAILING]
