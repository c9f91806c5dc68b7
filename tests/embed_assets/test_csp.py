"""What the strict CSP (script-src 'self'; style-src 'self') requires of the embed templates and scripts,
and the rules the scripts keep: the token in memory only, messages to one origin, the CSP-safe Vega."""

from __future__ import annotations

import re

import pytest

from tests.embed_assets import support
from tests.embed_assets.support import EMBED_JS, STATIC, parse_template

TEMPLATES = ["dashboard.html", "chat.html", "error.html"]


@pytest.mark.parametrize("template", TEMPLATES)
def test_templates_have_no_inline_script_or_style(template):
    parser = parse_template(template)
    assert parser.inline_scripts == 0
    assert parser.style_elements == 0
    assert parser.style_attributes == []
    assert parser.handler_attributes == []


@pytest.mark.parametrize("template", ["dashboard.html", "chat.html"])
def test_bootstrap_is_a_json_data_block(template):
    text = (STATIC.parent / "templates" / "embed" / template).read_text()
    assert '{{ bootstrap|json_script:"embed-bootstrap" }}' in text
    assert 'id="embed-root"' in text


FORBIDDEN = {
    "eval": r"\beval\s*\(",
    "Function constructor": r"\bnew\s+Function\b|\bFunction\s*\(",
    "string timer": r"set(Timeout|Interval)\s*\(\s*['\"`]",
    "innerHTML": r"\.(inner|outer)HTML\b|insertAdjacentHTML",
    "document.write": r"document\.write",
    "style attribute": r"setAttribute\(\s*['\"]style['\"]|\.style\.cssText|\.cssText\s*=",
    "storage": r"localStorage|sessionStorage|indexedDB|document\.cookie",
    "postMessage to any origin": r"postMessage\([^)]*['\"]\*['\"]",
}


@pytest.mark.parametrize("script", EMBED_JS, ids=lambda path: path.name)
def test_scripts_need_no_unsafe_csp_and_keep_no_token(script):
    code = script.read_text()
    for what, pattern in FORBIDDEN.items():
        assert not re.search(pattern, code), f"{script.name}: {what}"


def test_vega_is_embedded_with_the_csp_safe_options():
    code = (STATIC / "embed" / "common.js").read_text()
    call = code[code.index("window.vegaEmbed(") :]
    call = call[: call.index("});")]
    for option in (
        "ast: true",
        "expr: window.vega && window.vega.expressionInterpreter",
        'renderer: "canvas"',
        "actions: false",
        "defaultStyle: false",
        "tooltip: tooltipHandler(",
    ):
        assert option in call, option


def test_interpreter_loads_before_vega_embed_and_the_page_starts_before_the_libraries():
    parser = parse_template("dashboard.html")
    names = [reference.split("'")[1] for reference in parser.scripts]
    assert names.index("vendor/vega.min.js") < names.index("vendor/vega-interpreter.min.js")
    assert names.index("vendor/vega-interpreter.min.js") < names.index("vendor/vega-embed.min.js")
    # The page's scripts run first (all deferred, in order): the tiles' queries start while Vega is being run,
    # and a chart waits for the libraries (common.js: embedVega after DOMContentLoaded).
    assert names[:4] == ["embed/common.js", "embed/tiles.js", "embed/chat.js", "embed/dashboard.js"]
    source = (support.TEMPLATES / "dashboard.html").read_text()
    script_lines = [line for line in source.splitlines() if "<script src=" in line]
    assert len(script_lines) == len(names)
    assert all(" defer>" in line for line in script_lines)
