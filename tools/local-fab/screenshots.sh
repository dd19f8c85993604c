#!/usr/bin/env bash
# Regenerates docs/images/dashboard-*.png from a real local fab (builds the apps first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NX_DAEMON=false npx nx run-many -t build -p defender assignment-controller election-agent dashboard --output-style=static >/dev/null
SWC_NODE_PROJECT="$PWD/tsconfig.base.json" exec node -r ./node_modules/@swc-node/register/index.js tools/local-fab/src/screenshots.ts
