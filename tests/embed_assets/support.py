"""Paths and parsing shared by the embed asset checks (pure file checks: no server, no database)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "static"
TEMPLATES = REPO / "templates" / "embed"
FRONTEND = REPO / "frontend"
VENDOR = STATIC / "vendor"
EMBED_JS = sorted((STATIC / "embed").glob("*.js"))

# {% static 'path' %} inside an attribute value
STATIC_TAG = re.compile(r"""^\{%\s*static\s+['"]([^'"]+)['"]\s*%\}$""")


class AssetParser(HTMLParser):
    """Every <script src> and <link href> of a template, plus what a strict CSP would refuse."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.stylesheets: list[str] = []
        self.inline_scripts = 0
        self.style_elements = 0
        self.style_attributes: list[str] = []
        self.handler_attributes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name, _ in attrs:
            if name == "style":
                self.style_attributes.append(tag)
            if name.startswith("on"):
                self.handler_attributes.append(f"{tag} {name}")
        if tag == "script":
            if found.get("src"):
                self.scripts.append(found["src"] or "")
            elif (found.get("type") or "").lower() != "application/json":
                self.inline_scripts += 1
        elif tag == "link" and "stylesheet" in (found.get("rel") or "").split():
            self.stylesheets.append(found.get("href") or "")
        elif tag == "style":
            self.style_elements += 1


def parse_template(name: str) -> AssetParser:
    parser = AssetParser()
    parser.feed((TEMPLATES / name).read_text())
    return parser


def static_path(reference: str) -> Path:
    """The file a template's ``{% static '...' %}`` names; anything else (a URL) is refused."""
    match = STATIC_TAG.match(reference.strip())
    assert match, f"{reference!r} is not a {{% static %}} path of this product"
    return STATIC / match.group(1)


def pins() -> dict[str, str]:
    return json.loads((FRONTEND / "package.json").read_text())["dependencies"]
