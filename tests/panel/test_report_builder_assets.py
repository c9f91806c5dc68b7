"""The report builder page's assets: files of this product only (no CDN), no inline script or style, and within the
budgets recorded in docs/benchmarks.md ("Panel report builder"): the builder's own JavaScript and CSS at most 20 KB
gzipped, and everything the page loads besides Django admin's own files (the builder, the embed page's common.js and
tiles.js, and the vendored Vega) at most 400 KB gzipped, the embed page's budget. Pure file checks."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.embed_assets.support import REPO, AssetParser, static_path

TEMPLATE = REPO / "templates" / "panel" / "report_builder.html"
OWN_BUDGET_BYTES = 20 * 1024
PAGE_BUDGET_BYTES = 400 * 1024


def page_assets() -> tuple[AssetParser, list[Path]]:
    parser = AssetParser()
    parser.feed(TEMPLATE.read_text())
    return parser, [static_path(reference) for reference in parser.scripts + parser.stylesheets]


def gzipped(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), compresslevel=9))


def test_every_asset_is_a_static_file_of_this_product_and_nothing_is_inline():
    parser, assets = page_assets()

    # The preview is drawn by the embed page's own tile drawing (tiles.js), not a copy of it.
    assert {path.name for path in assets} >= {"builder.js", "builder.css", "common.js", "tiles.js", "vega.min.js"}
    for path in assets:
        assert path.is_file(), f"the builder loads {path}, which does not exist"
    assert parser.inline_scripts == 0
    assert parser.style_elements == 0
    assert parser.style_attributes == []
    assert parser.handler_attributes == []


def test_the_builders_own_javascript_and_css_are_within_20_kb_gzipped():
    _, assets = page_assets()
    own = {path.name: gzipped(path) for path in assets if path.parent.name == "panel"}

    assert set(own) == {"builder.js", "builder.css"}
    assert sum(own.values()) <= OWN_BUDGET_BYTES, f"{sum(own.values()) / 1024:.1f} KB gzipped > 20 KB: {own}"


def test_the_page_is_within_the_embed_pages_400_kb_gzipped():
    _, assets = page_assets()
    sizes = {path.name: gzipped(path) for path in assets}

    assert sum(sizes.values()) <= PAGE_BUDGET_BYTES, f"{sum(sizes.values()) / 1024:.1f} KB gzipped > 400 KB: {sizes}"
