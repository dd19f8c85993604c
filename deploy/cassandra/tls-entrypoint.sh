#!/bin/sh
# docker-compose.yml's Cassandra: CQL over TLS only, then the image's own entrypoint. Replaces the
# client_encryption_options block of the image's cassandra.yaml (on every start, so a restart or a
# newer image gets it too) with one that serves CQL over TLS and refuses plaintext (`optional:
# false`), from the PEM files deploy/tls/make-certs.sh made (PEMBasedSslContextFactory, Cassandra
# 4.1+: no Java keystore, no password).
#   CASSANDRA_TLS_DIR   where tls.pem (key and certificate) and ca.crt are; default /etc/cassandra-tls
#                       (not under /etc/cassandra: the image's entrypoint chowns that, which fails
#                       on a read-only mount)
set -eu
conf_dir=${CASSANDRA_CONF:-${CASSANDRA_CONFIG:-/etc/cassandra}}
yaml=$conf_dir/cassandra.yaml
tls_dir=${CASSANDRA_TLS_DIR:-/etc/cassandra-tls}
for f in tls.pem ca.crt; do
  if [ ! -r "$tls_dir/$f" ]; then
    echo "cassandra-tls: $tls_dir/$f is missing or unreadable (made by the compose service tls)" >&2
    exit 1
  fi
done
BLOCK="client_encryption_options:
  # Written by deploy/cassandra/tls-entrypoint.sh: TLS required on the native transport port.
  enabled: true
  optional: false
  ssl_context_factory:
    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory
  keystore: $tls_dir/tls.pem
  truststore: $tls_dir/ca.crt
  require_client_auth: false
"
export BLOCK
tmp=$(mktemp)
# Drops the old block (the key line and every indented or comment line after it), prints ours.
awk '
  /^client_encryption_options:/ { printf "%s", ENVIRON["BLOCK"]; skip = 1; found = 1; next }
  skip && /^[^ \t#]/ { skip = 0 }
  !skip { print }
  END { if (!found) printf "%s", ENVIRON["BLOCK"] }
' "$yaml" > "$tmp"
# cat, not mv: the file may be a bind mount (as the image's entrypoint does it).
cat "$tmp" > "$yaml"
rm -f "$tmp"
echo "cassandra-tls: CQL over TLS only ($tls_dir/tls.pem)"
exec docker-entrypoint.sh "$@"
