"""The vendored builds are the versions frontend/package.json pins (and the lock file resolves)."""

from __future__ import annotations

import json
import re

import pytest

from tests.embed_assets.support import FRONTEND, VENDOR, pins

# Where each build states its own version, besides the banner make vendor writes.
BUILT_IN_VERSION = {
    "vega": r't\.version="([^"]+)"',
    "vega-lite": r'var n="([^"]+)"',
    "vega-embed": r'const \w+="(\d+\.\d+\.\d+)"',
    "gridstack": r'GDRev="([^"]+)"',
}
# Stylesheets make vendor copies besides the scripts (the API reference's, the dashboard editor's grid).
STYLESHEETS = {"swagger-ui-dist", "gridstack"}
MAJOR = {
    "vega": "5",
    "vega-lite": "5",
    "vega-embed": "6",
    "vega-interpreter": "1",
    "swagger-ui-dist": "5",
    "gridstack": "14",
}


def test_pins_are_exact_and_on_the_expected_majors():
    pinned = pins()
    assert set(pinned) == set(MAJOR)
    for name, version in pinned.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} must be pinned exactly, not {version!r}"
        assert version.split(".")[0] == MAJOR[name], f"{name} {version} is not {MAJOR[name]}.x"


def test_lock_file_resolves_the_pins():
    lock = json.loads((FRONTEND / "package-lock.json").read_text())
    for name, version in pins().items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


@pytest.mark.parametrize("name", sorted(MAJOR))
def test_vendored_file_carries_the_pinned_version(name):
    text = (VENDOR / f"{name}.min.js").read_text()
    banner = re.match(r"/\*! ([\w-]+)@(\S+) ", text)
    assert banner, f"{name}.min.js has no version banner (run make vendor)"
    assert banner.groups() == (name, pins()[name])
    if name in BUILT_IN_VERSION:
        built = re.search(BUILT_IN_VERSION[name], text[:2000] if name == "vega-lite" else text)
        assert built, f"{name}.min.js states no version of its own"
        assert built.group(1) == pins()[name], f"{name}.min.js was built as {built.group(1)}"


def test_no_vendored_file_without_a_pin():
    shipped = {path.name.removesuffix(".min.js") for path in VENDOR.glob("*.js")}
    assert shipped == set(pins())


@pytest.mark.parametrize("name", sorted(STYLESHEETS))
def test_vendored_stylesheet_carries_the_pinned_version(name):
    text = (VENDOR / f"{name}.min.css").read_text()
    banner = re.match(r"/\*! ([\w-]+)@(\S+) ", text)
    assert banner
    assert banner.groups() == (name, pins()[name])
    assert {path.name.removesuffix(".min.css") for path in VENDOR.glob("*.css")} == STYLESHEETS
