#!/usr/bin/env bash
# Regenerates docs/images/dashboard-*.png from a real local fab (builds the apps first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"
node tools/scripts/workspace-node.js "the screenshots"
NX_DAEMON=false npx nx run-many -t build -p defender assignment-controller election-agent dashboard --output-style=static >/dev/null
exec node -r ./tools/scripts/register.js tools/local-fab/src/screenshots.ts
