// No zod here (nor anything that loads it): the defender's heartbeat thread imports this (ADR 0014).
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * The inbox prefix of a NATS user's connections (`connect({ inboxPrefix })`): request replies and
 * consumer deliveries come to `<prefix>.>`, the only subjects a role's user may subscribe to
 * (permissions.ts), so no user reads another's replies or watches. User names are one subject
 * token (`[A-Za-z0-9_-]`) for it.
 */
export function natsInboxPrefix(user: string): string {
  return `_INBOX_${user}`;
}

/**
 * The NATS user a client certificate stands for when nats-server maps certificates to users
 * (`tls { verify_and_map: true }`, SECURITY.md "Mutual TLS per role"): its first DNS name
 * (subjectAltName `DNS:<user>`), or undefined when it has none. A client connecting with such a
 * certificate and no NATS_USER takes its inbox prefix from it.
 * @throws Error when `pem` is not a certificate.
 */
export function natsUserOfCertificate(pem: string | Buffer): string | undefined {
  const san = new X509Certificate(pem).subjectAltName ?? '';
  return /(?:^|,\s*)DNS:([^,\s]+)/.exec(san)?.[1];
}

/**
 * The inbox prefix for a connection as `user`, or, without one, as the user its client certificate
 * maps to (read from `certFile`); undefined when neither names a user (an unrestricted client).
 */
export function natsInboxPrefixFor(user: string | undefined, certFile: string | undefined): string | undefined {
  const who = user ?? (certFile ? natsUserOfCertificate(readFileSync(certFile)) : undefined);
  return who === undefined ? undefined : natsInboxPrefix(who);
}
