"""The accessibility check itself (tests/e2e/axe.py) in Chromium, on pages served with the
console's own Content-Security-Policy (a routed URL, no server): it gets axe-core into a page
that refuses inline scripts, fails on serious violations with their rule, target and help, and
passes a page without them."""
import pytest

from .axe import assert_accessible, violations
from .test_console_browser import UI_TIMEOUT_MS, browser  # noqa: F401  (the module's Chromium, a fixture)

pytestmark = [pytest.mark.e2e]

CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
URL = "http://console.test/"


@pytest.fixture
def serve(browser):  # noqa: F811  (browser: the imported fixture)
    context = browser.new_context(locale="en-US")  # no bypass_csp: the policy is enforced
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()

    def load(body: str):
        html = f'<!doctype html><html lang="en"><head><title>t</title></head><body>{body}</body></html>'
        page.route(URL, lambda route: route.fulfill(status=200, body=html, content_type="text/html",
                                                    headers={"Content-Security-Policy": CSP}))
        page.goto(URL)
        return page

    yield load
    context.close()


def test_a_serious_violation_fails_with_rule_target_and_help(serve):
    page = serve('<main><h1>Inbox</h1><button id="ack" aria-label="Acknowledge disk full">ACK</button>'
                 '<script>window.inline = true</script></main>')
    assert page.evaluate("window.inline === undefined")  # the CSP refused the inline script
    with pytest.raises(AssertionError) as failed:
        assert_accessible(page, context="a test page")
    message = str(failed.value)
    assert "label-content-name-mismatch (serious)" in message
    assert "#ack" in message and "a test page" in message
    assert "dequeuniversity.com" in message  # the rule's help link


def test_a_clean_page_passes_and_milder_findings_are_returned(serve):
    page = serve('<main><h1>Inbox</h1><button aria-label="ACK disk full">ACK</button></main>'
                 '<p>outside any landmark</p>')
    milder = assert_accessible(page, context="a clean page")
    assert "region" in {v["id"] for v in milder}  # moderate: content outside a landmark
    assert all(v["impact"] in ("moderate", "minor") for v in milder)


def test_include_limits_the_run(serve):
    page = serve('<main><h1>x</h1><div id="a"><button aria-label="Delete">Keep</button></div>'
                 '<div id="b"><button>fine</button></div></main>')
    assert [v["id"] for v in violations(page, include=["#a"])] == ["label-content-name-mismatch"]
    assert violations(page, include=["#b"]) == []
