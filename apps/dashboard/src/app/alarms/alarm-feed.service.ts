import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Subject } from 'rxjs';
import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import { supervise } from '@defender/backoff';
import { NatsConnectionService } from '@defender/nest-common';
import { DashboardConfig } from '../config';
import { DASHBOARD_CONFIG } from '../tokens';
import { finiteOrNull, stringOrNull } from '../json-fields';
import { runAlarmOf, type RunAlarmView } from './run-alarm';

/** An alarm or hold from `defense.alarms.<tool>.<chamber>` / `defense.holds.<tool>.<chamber>`. */
export interface FeedItem {
  readonly kind: 'alarm' | 'hold';
  /** Stream sequence of the event. */
  readonly seq: number;
  /** When the event was stored. */
  readonly at: string;
  readonly chamber: string;
  readonly toolId: string;
  readonly chamberId: string;
  readonly runId: string | null;
  readonly sequence: number | null;
  readonly recipe: string | null;
  readonly ruleId: string | null;
  readonly indicatorKey: string | null;
  readonly svid: string | null;
  readonly statistic: string | null;
  readonly value: number | null;
  readonly lcl: number | null;
  readonly ucl: number | null;
  readonly center: number | null;
  readonly action: string | null;
  readonly message: string;
  /**
   * A run-level alarm of the chamber monitor (`ruleId` `RUN`): the rules that fired, T² / SPE, every
   * violation and the top contributors. Absent on every other alarm and on holds.
   */
  readonly run?: RunAlarmView;
}

/** Parses one event; null when it is not a readable alarm or hold (the feed skips it). */
export function feedItemOf(subject: string, seq: number, at: Date, data: string): FeedItem | null {
  const [, kindWord, toolId, chamberId] = /^defense\.(alarms|holds)\.([^.]+)\.([^.]+)$/.exec(subject) ?? [];
  if (!kindWord || !toolId || !chamberId) return null;
  let b: Record<string, unknown>;
  try {
    b = JSON.parse(data) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof SyntaxError) return null;
    throw err;
  }
  if (typeof b !== 'object' || b === null) return null;
  const kind = kindWord === 'alarms' ? 'alarm' : 'hold';
  const run = kind === 'alarm' ? runAlarmOf(stringOrNull(b['ruleId']), b['details']) : undefined;
  return {
    kind,
    seq,
    at: at.toISOString(),
    chamber: `${toolId}:${chamberId}`,
    toolId,
    chamberId,
    runId: stringOrNull(b['runId']),
    sequence: finiteOrNull(b['sequence']),
    recipe: stringOrNull(b['recipe']),
    ruleId: stringOrNull(b['ruleId']),
    indicatorKey: stringOrNull(b['indicatorKey']),
    svid: stringOrNull(b['svid']),
    statistic: stringOrNull(b['statistic']),
    value: finiteOrNull(b['value']),
    lcl: finiteOrNull(b['lcl']),
    ucl: finiteOrNull(b['ucl']),
    center: finiteOrNull(b['center']),
    action: stringOrNull(b['action']) ?? (kind === 'hold' ? 'HOLD_CHAMBER' : null),
    message: stringOrNull(b['message']) ?? stringOrNull(b['reason']) ?? '',
    ...(run ? { run } : {}),
  };
}

/**
 * The alarm feed: follows the defense-events stream (the last ALARM_FEED_SIZE events first) with an
 * ordered consumer and keeps them in a ring; new ones go to `updates` (server-sent to browsers).
 */
@Injectable()
export class AlarmFeedService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(AlarmFeedService.name);
  readonly updates = new Subject<FeedItem>();
  private readonly items: FeedItem[] = [];
  private messages: ConsumerMessages | undefined;
  /** Aborted at shutdown: the feed is not followed again. */
  private readonly stopping = new AbortController();
  private lastSeq = 0;
  private totals = { alarms: 0, holds: 0 };

  constructor(
    @Inject(DASHBOARD_CONFIG) private readonly config: DashboardConfig,
    private readonly nats: NatsConnectionService,
  ) {}

  onApplicationBootstrap(): void {
    void this.follow();
  }

  beforeApplicationShutdown(): void {
    this.stopping.abort();
    void this.messages?.close();
    this.updates.complete();
  }

  /** Newest first; optionally one chamber's. */
  recent(limit: number, chamber?: string): FeedItem[] {
    const out: FeedItem[] = [];
    for (let i = this.items.length - 1; i >= 0 && out.length < limit; i--) {
      const it = this.items[i];
      if (it && (!chamber || it.chamber === chamber)) out.push(it);
    }
    return out;
  }

  /** Events seen since the dashboard started (and the backlog it loaded). */
  counts(): { alarms: number; holds: number } {
    return { ...this.totals };
  }

  /** Follows the defense events stream for the dashboard's life: restarted when it fails or ends. */
  private async follow(): Promise<void> {
    const stream = this.config.DEFENSE_EVENTS_STREAM;
    await supervise(
      async (healthy) => {
        const nc = await this.nats.connection();
        const jsm = await jetstreamManager(nc);
        const info = await jsm.streams.info(stream);
        const start = Math.max(this.lastSeq + 1, info.state.last_seq - this.config.ALARM_FEED_SIZE + 1, 1);
        const consumer = await jetstream(nc).consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start });
        this.messages = await consumer.consume({ max_messages: 500 });
        this.logger.log({ msg: 'following alarms', stream, fromSequence: start });
        healthy();
        for await (const m of this.messages) {
          this.lastSeq = m.seq;
          const item = feedItemOf(m.subject, m.seq, m.time, m.string());
          if (!item) continue;
          if (item.kind === 'alarm') this.totals.alarms++;
          else this.totals.holds++;
          this.items.push(item);
          if (this.items.length > this.config.ALARM_FEED_SIZE) this.items.shift();
          this.updates.next(item);
        }
      },
      {
        baseMs: 500,
        maxMs: 5000,
        random: Math.random,
        signal: this.stopping.signal,
        // The stream appears when the first defender starts; NATS may restart: try again.
        onFailure: (err) => this.logger.debug({ msg: 'alarm feed not available yet', stream, err: (err as Error).message }),
      },
    );
  }
}
