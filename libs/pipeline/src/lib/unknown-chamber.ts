import { deadLetterRecord } from '@defender/contracts';
import type { EventSink } from './ports';

/** What {@link UnknownChamberDeadLetters} reports (metrics, logs); all optional. */
export interface UnknownChamberObserver {
  deadLettered?(chamber: string, sequence: number): void;
  /** The notification could not be read or its dead letter not published: it stays in the stream only. */
  failed?(chamber: string, sequence: number, err: unknown): void;
}

export interface UnknownChamberDeps {
  /** The first notification on `subject` at or after `sequence` (NotificationReader.next), or null. */
  readonly read: (subject: string, sequence: number) => Promise<{ readonly sequence: number; readonly data: Uint8Array } | null>;
  readonly sink: EventSink;
  /** This defender's ID, if it has one yet (recorded in the dead letter). */
  readonly defenderId: () => string | undefined;
  readonly now: () => Date;
  readonly observer?: UnknownChamberObserver;
}

/**
 * Dead-letters notifications of chambers no defender owns (not in chamber_metadata, so not in the
 * assignment map) to `dc.dead.unknown-chamber`, once per notification (the message id is the
 * chamber and sequence, so defenders that all see it publish one dead letter). The notification
 * stays in the stream: if the chamber is added later, its owner starts from the stream's beginning.
 * Never throws: a failure is reported and the notification is only left in the stream.
 */
export class UnknownChamberDeadLetters {
  constructor(private readonly deps: UnknownChamberDeps) {}

  /** Handles the notice of `sequence` on `subject` for `chamber` (`<tool>:<chamber>`). */
  async deadLetter(subject: string, chamber: string, sequence: number): Promise<'dead-lettered' | 'gone' | 'failed'> {
    try {
      const msg = await this.deps.read(subject, sequence);
      if (!msg || msg.sequence !== sequence) return 'gone';
      const dl = deadLetterRecord({
        reason: 'unknown-chamber',
        detail: `no defender owns ${chamber}: it is not in the assignment map (add it to chamber_metadata)`,
        subject,
        streamSequence: sequence,
        payload: msg.data,
        defenderId: this.deps.defenderId() ?? 'unknown',
        attempts: 1,
        deadLetteredAt: this.deps.now().toISOString(),
      });
      await this.deps.sink.publish('dc.dead.unknown-chamber', JSON.stringify(dl), `dead:${chamber}:${sequence}`);
      this.deps.observer?.deadLettered?.(chamber, sequence);
      return 'dead-lettered';
    } catch (err) {
      this.deps.observer?.failed?.(chamber, sequence, err);
      return 'failed';
    }
  }
}
