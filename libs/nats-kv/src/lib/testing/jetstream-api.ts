import type { NatsConnection, Subscription } from '@nats-io/nats-core';

/** A JetStream API answer: the operation's result, or `error`. */
export interface ApiBody {
  readonly error?: { readonly code: number; readonly err_code?: number; readonly description?: string };
  readonly [field: string]: unknown;
}

/** What a JetStream API request got: refused by the server's permissions, no responder, or the API's answer. */
export type ApiOutcome = { readonly kind: 'denied'; readonly message: string } | { readonly kind: 'no-responders' } | { readonly kind: 'answered'; readonly body: ApiBody };

const DENIED = /Permissions Violation for Publish/;

/** The messages of an error and its causes, outermost first. */
function messages(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err as { message?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) out.push(String(e.message));
  return out;
}

/**
 * Sends one raw JetStream API request (`$JS.API.<...>`, JSON body) and classifies the outcome: a
 * permission violation (the server refused the publish), no responder, or the API's JSON answer (which
 * may itself be an API error). Anything else (a timeout, a closed connection) throws.
 */
export async function jsApi(nc: NatsConnection, subject: string, body?: unknown): Promise<ApiOutcome> {
  try {
    const m = await nc.request(subject, body === undefined ? '' : JSON.stringify(body), { timeout: 5000 });
    const text = m.string();
    if (m.headers?.code === 503) return { kind: 'no-responders' };
    return { kind: 'answered', body: text ? (JSON.parse(text) as ApiBody) : {} };
  } catch (err) {
    const all = messages(err);
    const denied = all.find((m) => DENIED.test(m));
    if (denied) return { kind: 'denied', message: denied };
    if (all.some((m) => /no responders/i.test(m))) return { kind: 'no-responders' };
    throw err;
  }
}

/**
 * Subscribes to `subject` and reports whether the server refused it: resolves `denied` when the
 * subscription is closed with a permission violation, `allowed` once a round trip to the server
 * (a flush) has passed without one.
 */
export async function trySubscribe(nc: NatsConnection, subject: string): Promise<'denied' | 'allowed'> {
  const sub: Subscription = nc.subscribe(subject);
  const closed = sub.closed.then((r) => (r instanceof Error && /Permissions Violation for Subscription/.test(r.message) ? 'denied' : 'closed'));
  // The server answers a refused SUB with -ERR before the PONG of the flush behind it.
  await nc.flush();
  const outcome = await Promise.race([closed, nc.flush().then(() => 'allowed' as const)]);
  if (!sub.isClosed()) sub.unsubscribe();
  if (outcome === 'closed') throw new Error(`subscription to ${subject} closed without a permission violation`);
  return outcome;
}
