import type { Logger } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import { isStreamNotFound, STREAMS } from '@defender/nats-kv';
import { parseStreamHealth, streamBanner, type DefenderStreamReport, type StreamRecreation } from './stream-banner';

/** What a {@link StreamWatcher} needs. */
export interface StreamWatcherDeps {
  readonly connection: () => Promise<NatsConnection>;
  /** The local fab's launcher (its process list names the defenders' addresses), when there is one. */
  readonly localFab: { readonly url: string; readonly token: string | undefined } | undefined;
  /** Shows (or, with `undefined`, clears) a problem line of the view. */
  readonly problem: (key: 'stream' | 'stream-recreated', text: string | undefined) => void;
  readonly logger: Logger;
}

/**
 * The notification stream as the dashboard shows it, read at every refresh: missing (NATS lost it;
 * the defenders create it again) is a problem line; recreated since an earlier refresh (chambers
 * pause and re-base onto it, ADR 0007) is one until the defenders report the re-base over, then a
 * history line ({@link streamBanner}).
 */
export class StreamWatcher {
  private id: string | null = null;
  /** The last identity read (kept while the stream is missing, to tell a recreation). */
  private lastStreamId: string | null = null;
  /** The last recreation seen, and whether the defenders reported it over (then they are not asked again). */
  private recreation: StreamRecreation | null = null;
  private recreationOver = false;
  /** The stream banner's quiet history line (see stream-banner.ts). */
  private streamNote: string | undefined;

  constructor(private readonly deps: StreamWatcherDeps) {}

  /** The stream's identity (its `created` time) at the last read; null while missing or unread. */
  get streamId(): string | null {
    return this.id;
  }

  /** The banner's history line, if any. */
  get note(): string | undefined {
    return this.streamNote;
  }

  async read(): Promise<void> {
    const name = STREAMS.notifications;
    const problem = this.deps.problem;
    try {
      const info = await (await jetstreamManager(await this.deps.connection())).streams.info(name);
      problem('stream', undefined);
      if (this.lastStreamId !== null && this.lastStreamId !== info.created) {
        this.recreation = { was: this.lastStreamId, now: info.created };
        this.recreationOver = false;
      }
      this.id = info.created;
      this.lastStreamId = info.created;
    } catch (err) {
      this.id = null;
      const missing = isStreamNotFound(err);
      problem('stream', missing ? `stream ${name} is missing (NATS lost its store?): the defenders create it again` : `cannot read stream ${name}: ${(err as Error).message}`);
    }
    if (!this.recreation || this.recreationOver) return;
    let banner;
    try {
      banner = streamBanner(name, this.recreation, await this.defenderStreamReports());
    } catch (err) {
      banner = { problem: `stream ${name} was recreated at ${this.recreation.now} (was ${this.recreation.was}): cannot ask the defenders whether their chambers re-based: ${(err as Error).message}` };
    }
    problem('stream-recreated', banner.problem);
    this.streamNote = banner.note;
    // Over as the defenders report it: they are not asked again until the next recreation.
    this.recreationOver = banner.problem === undefined;
  }

  /**
   * Each running defender's view of the notification stream (its `GET /api/v1/chambers`), or null
   * when the dashboard has no addresses for them: only the local fab's launcher lists them
   * (LOCAL_FAB_CONTROL_URL); in a cluster the defenders sit behind no per-pod address it knows.
   * @throws when the launcher does not list its processes.
   */
  private async defenderStreamReports(): Promise<DefenderStreamReport[] | null> {
    const fab = this.deps.localFab;
    if (!fab) return null;
    const res = await fetch(`${fab.url}/control/processes`, { headers: { authorization: `Bearer ${fab.token}` }, signal: AbortSignal.timeout(2000) });
    if (!res.ok) throw new Error(`the local fab's process list: HTTP ${res.status}`);
    const body = (await res.json()) as { processes?: unknown };
    const processes = Array.isArray(body.processes) ? (body.processes as Record<string, unknown>[]) : [];
    const defenders = processes.filter((p) => p['role'] === 'defender' && p['alive'] === true && typeof p['url'] === 'string');
    return Promise.all(
      defenders.map(async (p): Promise<DefenderStreamReport> => {
        const defender = typeof p['defenderId'] === 'string' ? p['defenderId'] : String(p['name']);
        try {
          const r = await fetch(`${p['url'] as string}/api/v1/chambers`, { signal: AbortSignal.timeout(900) });
          return { defender, health: r.ok ? parseStreamHealth(await r.json()) : null };
        } catch (err) {
          this.deps.logger.debug({ msg: 'defender did not report its stream health', defender, err: (err as Error).message });
          return { defender, health: null };
        }
      }),
    );
  }
}
