"""The embed page's message door (issue 22), in real headless Chromium inside the sample host app: the embed acts
only on messages from the page that frames it, from the account's allowed origin. A sibling frame of the same
origin (an ad, a widget the host embeds) cannot drive it, and the embed posts its events to that origin only."""

# ruff: noqa: F811  (the fixtures imported from the browser tests are redefined as test arguments, as pytest wants)

from __future__ import annotations

import json

import pytest

from tests.dashboards.test_embed_browser import (  # noqa: F401
    Embed,
    browser,
    embed,
    events,
    open_host,
    page,
    wait_for_event,
)
from tests.semantic.http_support import demo_duckdb, fresh_semantic_state  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

# The embed reports its content's size whenever a late layout (a chart drawn, a font loaded) changes it: that is the
# page settling, not an answer to a message, so the checks below look at every other event.
SETTLING = {"resize"}

REFRESH = {"source": "cube-embed", "direction": "action", "type": "cube:action:refresh", "payload": {}}


def _post_from_a_sibling_frame(page, message: dict) -> None:
    """A frame beside the embed, of the host's own origin (srcdoc inherits it), posts ``message`` to the embed."""
    page.evaluate(
        """(message) => new Promise((resolve) => {
            const sibling = document.createElement("iframe");
            sibling.srcdoc = "<p>ad</p>";
            sibling.onload = () => {
                const embed = document.querySelector("iframe#embed").contentWindow;
                sibling.contentWindow.eval("(" + ((target, m) => target.postMessage(m, "*")) + ")")(embed, message);
                resolve();
            };
            document.body.appendChild(sibling);
        })""",
        message,
    )


def test_a_sibling_frame_cannot_drive_the_embed_but_the_host_can(page, embed: Embed):
    open_host(page, embed, "anna")
    count = len(events(page))

    # when: a sibling frame asks for a refresh, then the host itself does
    _post_from_a_sibling_frame(page, REFRESH)
    page.wait_for_timeout(1500)
    after_sibling = [name for name, _ in events(page)[count:] if name not in SETTLING]
    page.evaluate("() => window.embedHost.act('cube:action:refresh')")
    reloaded = wait_for_event(page, "dashboard-loaded", after=count)

    # then
    assert after_sibling == []
    assert json.dumps(reloaded)  # the host's own action was obeyed


def test_a_filter_set_by_a_sibling_frame_is_ignored_and_by_the_host_applied(page, embed: Embed):
    open_host(page, embed, "anna")
    count = len(events(page))
    payload = {"filterUrlParameter": 'f_sales.status={"value":"cancelled"}'}
    message = {"source": "cube-embed", "direction": "action", "type": "cube:action:set-filter", "payload": payload}

    _post_from_a_sibling_frame(page, message)
    page.wait_for_timeout(1500)
    after_sibling = [name for name, _ in events(page)[count:] if name not in SETTLING]
    page.evaluate("(payload) => window.embedHost.act('cube:action:set-filter', payload)", payload)
    changed = wait_for_event(page, "filters-changed", after=count)

    assert after_sibling == []
    assert "cancelled" in json.dumps(changed)
