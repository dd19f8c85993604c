#!/usr/bin/env bash
# The local fab in one command, also on a fresh clone: installs the dependencies when they are
# missing or older than package-lock.json, builds the four apps (Nx caches them), then starts a
# private nats-server over TLS (installed from Debian when missing and root; with --nats-cluster
# three nodes, replicas 3), the election agent, the controller, 3 defenders, the dashboard and the fab
# simulator. Ctrl-C stops everything.
#   bash tools/local-fab/start.sh --help
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mkdir -p tmp/local-fab
# The workspace's Node (installed by npm ci, tools/scripts/workspace-node.js) also when this script
# is run directly instead of through `npm start`.
export PATH="$PWD/node_modules/.bin:$PATH"

if [ ! -x node_modules/.bin/nx ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # npm's own output (a minute or two of deprecation warnings on a fresh clone) goes to a log: the
  # terminal gets one line per step, and the log's end when it fails.
  echo "local-fab: installing dependencies (npm ci, a minute or two on a fresh clone; log: tmp/local-fab/install.log) ..."
  started=$SECONDS
  if ! npm ci --no-audit --no-fund >tmp/local-fab/install.log 2>&1; then
    tail -n 40 tmp/local-fab/install.log
    echo "local-fab: npm ci failed (full log: tmp/local-fab/install.log)" >&2
    exit 1
  fi
  echo "local-fab: dependencies installed in $((SECONDS - started)) s"
fi
node tools/scripts/workspace-node.js "the local fab (npm start)"

case " $* " in
  *" --help "* | *" -h "*) ;;
  *)
    # A wrong option is reported at once, not after the build.
    LOCAL_FAB_CHECK_ONLY=1 node -r ./tools/scripts/register.js tools/local-fab/src/main.ts "$@"
    echo "local-fab: building defender, assignment-controller, election-agent, dashboard (log: tmp/local-fab/build.log) ..."
    started=$SECONDS
    if ! NX_DAEMON=false npx nx run-many -t build -p defender assignment-controller election-agent dashboard --output-style=static >tmp/local-fab/build.log 2>&1; then
      tail -n 40 tmp/local-fab/build.log
      echo "local-fab: the build failed (full log: tmp/local-fab/build.log)" >&2
      exit 1
    fi
    echo "local-fab: built in $((SECONDS - started)) s; starting the processes ..."
    ;;
esac

exec node -r ./tools/scripts/register.js tools/local-fab/src/main.ts "$@"
