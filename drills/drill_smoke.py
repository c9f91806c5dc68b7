"""Smoke drill: the harness itself. Start the cluster, mint sessions, run distinct ``/v1/load`` queries; every
request answers 200. No fault: if this fails, the harness (or the product's start-up) is broken, not resilience."""

from __future__ import annotations

from drills._cluster import ClusterFactory, Drill, load

BUDGET_SECONDS = 150


def run(cluster: ClusterFactory) -> Drill:
    drill = Drill("smoke")
    with cluster(postgres_data=True) as c:
        drill.figures["cluster_start_s"] = {k: round(v, 1) for k, v in c.started_in.items()}
        drill.figures["web_workers"] = len(c.worker_pids())
        drill.expect(f"gunicorn runs {c.workers} workers (has {len(c.worker_pids())})", len(c.worker_pids()) == 2)
        ready = c.request("GET", "/readyz")
        drill.expect(f"/readyz answers 200 (got {ready.status})", ready.status == 200)

        first = c.mint_session("smoke-first@example.com")
        drill.expect(
            f"one session minted (status {first.status}, sessionId in the answer)",
            first.status == 200 and "sessionId" in (first.json() if first.is_json else {}),
        )
        sessions = load(c, "session", 100, concurrency=8)
        drill.figures["sessions"] = sessions.summary()
        drill.expect(f"100 sessions minted over 8 clients, {sessions.failed} failed", sessions.failed == 0)

        for tenant in c.tenants:
            queries = load(c, "load", 200, concurrency=8, tenant=tenant, label=f"load {tenant}")
            drill.figures[f"load_{tenant}"] = queries.summary()
            drill.expect(
                f"200 distinct /v1/load queries on {tenant} data, {queries.failed} failed", queries.failed == 0
            )

        drill.figures["worker_rss_mb"] = [round(kb / 1024) for kb in c.worker_rss_kb().values()]
    return drill
