"""A sample host application: what a software company's own app does to embed a dashboard.

Its back end mints a ``sessionId`` for the signed-in viewer with the account's API key (which never
reaches the browser) and its page puts ``/embed/dashboard/{publicId}?session=...`` in an iframe. It
runs on its own port, so the iframe is cross-origin exactly as in production, and it answers the
embed's messages: it sizes the iframe to ``cube:event:resize`` and renews the session in place when
the embed announces ``cube:event:session-expiring``.

    python demo/host_app.py --embed-url http://127.0.0.1:4000 --port 4100

Standard library only: it stands for any back end in any language.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Viewer:
    """A signed-in user of the host app, and what the host tells embedadmin about them."""

    key: str
    name: str
    organisation: str
    embed_tenant: str
    country: str

    def session_request(self, deployment_id: int, *, allow_export: bool = False) -> dict:
        # What the viewer may do is the host's to say, signed into the session: the embed's URL can only narrow it.
        return {
            "deploymentId": deployment_id,
            "externalId": f"{self.key}@{self.embed_tenant}",
            "embedTenantName": self.embed_tenant,
            "groups": ["regional"],
            "userAttributes": [{"name": "country", "value": self.country}],
            "userProfile": {"displayName": self.name},
            "settings": {"allowExport": allow_export},
        }


VIEWERS = {
    v.key: v
    for v in (
        Viewer("anna", "Anna Berg", "Northwind Traders", "northwind-traders", "Germany"),
        Viewer("louis", "Louis Martin", "Contoso Shops", "contoso-shops", "France"),
    )
}
DASHBOARDS = {"SalesOvervw1": "Sales overview", "CustomerMix1": "Customers", "ChartGallery": "Chart gallery"}


class EmbedAdmin:
    """The host back end's client of embedadmin: one call, generate-session."""

    def __init__(self, base_url: str, api_key: str, deployment_id: int) -> None:
        if urlsplit(base_url).scheme not in ("http", "https"):
            raise ValueError(f"--embed-url must be an http(s) URL, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.deployment_id = deployment_id

    def generate_session(self, viewer: Viewer, *, allow_export: bool = False) -> str:
        request = urllib.request.Request(  # noqa: S310 (http(s) checked in __init__)
            f"{self.base_url}/api/v1/embed/generate-session",
            data=json.dumps(viewer.session_request(self.deployment_id, allow_export=allow_export)).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Api-Key {self.api_key}"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (http(s) checked in __init__)
            return json.load(response)["sessionId"]


# The embed page's own URL parameters (docs/dashboards.md, "URL grammar"): passed through from the host page's
# address, so `/?f_sales.status={"values":["completed"]}` or `/?showDashboardTitle=false` shows what they do.
EMBED_PARAMS = ("f_", "tg_", "ms_", "show", "locale", "timezone")


def _allow_export(query: dict[str, list[str]]) -> bool:
    """The host page's own switch `/?allowExport=true`: this host then mints its viewer's sessions with export
    allowed (a setting of the session, on the server side; the embed's URL could not allow it)."""
    return query.get("allowExport", [""])[0] == "true"


def _page(
    *,
    embed: EmbedAdmin,
    viewer: Viewer,
    public_id: str,
    session_id: str,
    params: list[tuple[str, str]],
    allow_export: bool,
) -> str:
    passed = [(k, v) for k, v in params if k.startswith(EMBED_PARAMS)]
    iframe_src = f"{embed.base_url}/embed/dashboard/{public_id}?{urlencode([('session', session_id), *passed])}"

    def link(viewer_key: str, dashboard: str, active: bool, label: str) -> str:
        kept = {"allowExport": "true"} if allow_export else {}
        href = html.escape("/?" + urlencode({"viewer": viewer_key, "dashboard": dashboard, **kept}))
        return f'<a class="{"active" if active else ""}" href="{href}">{label}</a>'

    viewer_links = "".join(
        link(
            v.key,
            public_id,
            v.key == viewer.key,
            f"{html.escape(v.name)}<small>{html.escape(v.organisation)} · {html.escape(v.country)}</small>",
        )
        for v in VIEWERS.values()
    )
    dashboard_links = "".join(
        link(viewer.key, key, key == public_id, html.escape(title)) for key, title in DASHBOARDS.items()
    )
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Acme Portal · {html.escape(DASHBOARDS.get(public_id, public_id))}</title>
  <link rel="stylesheet" href="/host.css">
</head>
<body data-embed-origin="{html.escape(embed.base_url)}" data-viewer="{html.escape(viewer.key)}"
      data-allow-export="{"true" if allow_export else "false"}">
  <header class="topbar"><strong>Acme Portal</strong><span>signed in as {html.escape(viewer.name)}</span></header>
  <div class="layout">
    <nav>
      <h2>Analytics</h2>{dashboard_links}
      <h2>View as</h2>{viewer_links}
    </nav>
    <main>
      <iframe id="embed" title="Embedded dashboard" src="{html.escape(iframe_src)}"></iframe>
      <section class="events"><h2>Messages from the embed</h2><ol id="events"></ol></section>
    </main>
  </div>
  <script src="/host.js"></script>
</body>
</html>"""


def make_handler(embed: EmbedAdmin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "AcmePortal/1"

        def log_message(self, format: str, *args: object) -> None:  # quiet by default
            return

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _viewer(self, query: dict[str, list[str]]) -> Viewer:
            return VIEWERS.get(query.get("viewer", ["anna"])[0], VIEWERS["anna"])

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            if url.path in ("/host.js", "/host.css"):
                kind = "text/javascript" if url.path.endswith(".js") else "text/css"
                self._send(200, (HERE / "host" / url.path.lstrip("/")).read_bytes(), f"{kind}; charset=utf-8")
                return
            if url.path != "/":
                self._send(404, b"not found", "text/plain")
                return
            viewer = self._viewer(query)
            public_id = query.get("dashboard", ["SalesOvervw1"])[0]
            allow_export = _allow_export(query)
            try:
                session_id = embed.generate_session(viewer, allow_export=allow_export)
            except (urllib.error.URLError, OSError, KeyError, ValueError) as exc:
                self._send(502, f"could not mint a session: {exc}".encode(), "text/plain; charset=utf-8")
                return
            params = parse_qsl(url.query, keep_blank_values=True)
            page = _page(
                embed=embed,
                viewer=viewer,
                public_id=public_id,
                session_id=session_id,
                params=params,
                allow_export=allow_export,
            )
            self._send(200, page.encode(), "text/html; charset=utf-8")

        def do_POST(self) -> None:
            # The page asks for a fresh session when the embed announces its token is about to expire; the renewed
            # session says what the first one said.
            url = urlsplit(self.path)
            if url.path != "/session":
                self._send(404, b"not found", "text/plain")
                return
            query = parse_qs(url.query)
            try:
                session_id = embed.generate_session(self._viewer(query), allow_export=_allow_export(query))
            except (urllib.error.URLError, OSError, KeyError, ValueError) as exc:
                self._send(502, json.dumps({"error": str(exc)}).encode(), "application/json")
                return
            self._send(200, json.dumps({"sessionId": session_id}).encode(), "application/json")

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embed-url", default="http://127.0.0.1:4000", help="where embedadmin serves")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4100)
    parser.add_argument("--credentials", default="var/demo-credentials.json", help="the demo account's credentials")
    args = parser.parse_args(argv)
    credentials = json.loads(Path(args.credentials).read_text())
    embed = EmbedAdmin(args.embed_url, credentials["apiKey"], int(credentials["deploymentId"]))
    server = ThreadingHTTPServer((args.host, args.port), make_handler(embed))
    print(f"  Host app:       http://{args.host}:{args.port}/  (a sample app embedding a dashboard)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
