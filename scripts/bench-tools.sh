#!/usr/bin/env bash
# What the benchmarks need beyond the test services: wrk (a C load generator for the closed-loop runs) and the
# Cube 1.7.43 peer that bench/core_api.py measures beside (installed from the npm registry by its own setup script).
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[bench-tools] %s\n' "$*" >&2; }

if ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >&2 \
      || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >&2; }
  else
    log "wrk is missing and we are not root: install it (apt-get install wrk)"; exit 1
  fi
fi

peer_dir=${CUBE_PEER_DIR:-../cube-peer-run}
peer_scripts=${CUBE_PEER_SHARED:-../shared/cube-peer}
if [ ! -d "$peer_dir/node_modules/@cubejs-backend" ]; then
  if [ -x "$peer_scripts/setup.sh" ]; then
    "$peer_scripts/setup.sh" "$peer_dir" >&2
  else
    log "no Cube peer at $peer_dir and no $peer_scripts/setup.sh: bench/core_api.py will say so and stop"
  fi
fi
