"""The dashboard page's JavaScript and CSS: served by the product itself and within 400 KB gzipped."""

from __future__ import annotations

import gzip

import pytest

from tests.embed_assets.support import parse_template, static_path

BUDGET_BYTES = 400 * 1024


def page_assets(template: str) -> list:
    parser = parse_template(template)
    return [static_path(reference) for reference in parser.scripts + parser.stylesheets]


@pytest.mark.parametrize("template", ["dashboard.html", "chat.html", "error.html"])
def test_every_asset_is_a_static_file_of_this_product(template):
    # static_path refuses anything that is not {% static '...' %}: no CDN, no other origin, no protocol-relative URL.
    assets = page_assets(template)
    assert assets, f"{template} loads nothing"
    for path in assets:
        assert path.is_file(), f"{template} loads {path}, which does not exist"


def test_dashboard_page_is_within_400_kb_gzipped():
    assets = page_assets("dashboard.html")
    assert any(path.suffix == ".css" for path in assets)
    assert any(path.name == "dashboard.js" for path in assets)
    sizes = {path.name: len(gzip.compress(path.read_bytes(), compresslevel=9)) for path in assets}
    total = sum(sizes.values())
    assert total <= BUDGET_BYTES, f"{total / 1024:.1f} KB gzipped > 400 KB: {sizes}"
