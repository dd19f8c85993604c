#!/bin/sh
# Makes a private CA and the server certificates of a Defender stack, once: NATS, Cassandra and the
# election agents' gRPC in docker-compose.yml (its one-shot `tls` service), NATS in the local fab.
#
#   make-certs.sh <ca-dir> <uid>:<dir>:<name>[,<name>...] [<uid>:<dir>:<names> ...]
#
# <ca-dir> receives ca.crt, what every client trusts (NATS_TLS_CA_FILE, CASSANDRA_TLS_CA_FILE,
# ELECTION_TLS_CA_FILE). Each <dir> receives one server certificate for <names> (host names, or IP
# addresses such as 127.0.0.1; the first is also the subject's CN):
#   tls.crt  the certificate        tls.key  its key (EC P-256, PKCS#8, mode 0400)
#   tls.pem  key and certificate in one file (Cassandra's PEMBasedSslContextFactory keystore)
#   ca.crt   the CA again (Cassandra's truststore, cqlsh, `docker compose cp` to the host)
# owned by <uid> when run as root (the process that serves with it: nats 0, cassandra 999, the
# apps' `node` 1000). The CA's key is discarded, so nobody can issue more certificates from it.
#
# Existing files are kept while every certificate chains to ca.crt, names what it is asked to name
# and is valid for 30 more days (a restarted stack keeps its certificates); otherwise everything is
# made anew (rotation: delete <ca-dir>/ca.crt, or `docker compose down -v`, and run again).
#
# For Kubernetes without cert-manager (k8s/README.md):
#   sh deploy/tls/make-certs.sh tmp/tls "$(id -u):tmp/tls/election-agent:election-agent" \
#     "$(id -u):tmp/tls/nats:nats" "$(id -u):tmp/tls/cassandra:cassandra"
set -eu
usage='usage: make-certs.sh <ca-dir> <uid>:<dir>:<name>[,<name>...] ...'
ca_dir=${1:?$usage}
shift
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
days=825

# The subjectAltName extension for a comma-separated list of names.
san_of() {
  san=""
  for n in $(echo "$1" | tr ',' ' '); do
    case "$n" in
      *[!0-9.]* | '') case "$n" in *:*) kind=IP ;; *) kind=DNS ;; esac ;;
      *) kind=IP ;;
    esac
    san="${san:+$san,}$kind:$n"
  done
  echo "$san"
}

for spec in "$@"; do
  case "$spec" in
    *:*:?*) ;;
    *) echo "make-certs: '$spec' is not <uid>:<dir>:<names>" >&2; exit 2 ;;
  esac
done

# Whether every requested certificate exists, chains to ca.crt, names its names and lasts 30 days.
current() {
  [ -s "$ca_dir/ca.crt" ] || return 1
  for spec in "$@"; do
    dir=$(echo "$spec" | cut -d: -f2)
    names=$(echo "$spec" | cut -d: -f3-)
    for f in tls.crt tls.key tls.pem ca.crt; do [ -s "$dir/$f" ] || return 1; done
    openssl verify -CAfile "$ca_dir/ca.crt" "$dir/tls.crt" >/dev/null 2>&1 || return 1
    openssl x509 -in "$dir/tls.crt" -noout -checkend 2592000 >/dev/null 2>&1 || return 1
    have=$(openssl x509 -in "$dir/tls.crt" -noout -ext subjectAltName 2>/dev/null | tr -d ' ' | tail -n +2)
    for want in $(san_of "$names" | tr ',' ' '); do
      want=$(echo "$want" | sed 's/^IP:/IPAddress:/')
      case ",$have," in *",$want,"*) ;; *) return 1 ;; esac
    done
  done
}

if current "$@"; then
  echo "make-certs: keeping the existing CA and certificates in $ca_dir"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key "$work/ca.key"
openssl req -x509 -new -key "$work/ca.key" -sha256 -days "$days" -subj /CN=defender-private-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -out "$work/ca.crt"
[ -d "$ca_dir" ] || { mkdir -p "$ca_dir"; chmod 0755 "$ca_dir"; }
i=0
for spec in "$@"; do
  i=$((i + 1))
  uid=$(echo "$spec" | cut -d: -f1)
  dir=$(echo "$spec" | cut -d: -f2)
  names=$(echo "$spec" | cut -d: -f3-)
  cn=$(echo "$names" | cut -d, -f1)
  key "$work/$i.key"
  openssl req -new -key "$work/$i.key" -subj "/CN=$cn" -out "$work/$i.csr"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n' "$(san_of "$names")" > "$work/$i.ext"
  openssl x509 -req -in "$work/$i.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days "$days" -sha256 \
    -extfile "$work/$i.ext" -out "$work/$i.crt" 2>/dev/null
  [ -d "$dir" ] || { mkdir -p "$dir"; chmod 0755 "$dir"; }
  rm -f "$dir/tls.crt" "$dir/tls.key" "$dir/tls.pem" "$dir/ca.crt"
  cp "$work/$i.crt" "$dir/tls.crt"
  cp "$work/$i.key" "$dir/tls.key"
  cat "$work/$i.key" "$work/$i.crt" > "$dir/tls.pem"
  cp "$work/ca.crt" "$dir/ca.crt"
  chmod 0400 "$dir/tls.key" "$dir/tls.pem"
  chmod 0444 "$dir/tls.crt" "$dir/ca.crt"
  if [ "$(id -u)" = 0 ]; then chown "$uid:$uid" "$dir/tls.crt" "$dir/tls.key" "$dir/tls.pem" "$dir/ca.crt"; fi
  echo "make-certs: $dir: a certificate for $names"
done
# Last: ca.crt present means the set is complete (a run cut short is made anew next time).
rm -f "$ca_dir/ca.crt"
cp "$work/ca.crt" "$ca_dir/ca.crt"
chmod 0444 "$ca_dir/ca.crt"
echo "make-certs: a new private CA in $ca_dir (its key discarded)"
