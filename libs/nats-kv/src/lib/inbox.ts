// No zod here (nor anything that loads it): the defender's heartbeat thread imports this (ADR 0014).

/**
 * The inbox prefix of a NATS user's connections (`connect({ inboxPrefix })`): request replies and
 * consumer deliveries come to `<prefix>.>`, the only subjects a role's user may subscribe to
 * (permissions.ts), so no user reads another's replies or watches. User names are one subject
 * token (`[A-Za-z0-9_-]`) for it.
 */
export function natsInboxPrefix(user: string): string {
  return `_INBOX_${user}`;
}
