import { timeline, type TimelineEvent } from '@defender/benchmarks';
import type { TimelineEntry } from './report';

/** Bookkeeping of the harness: every process start, first heartbeat and exit is in the table, not the picture. */
const ROUTINE = new Set(['start', 'first heartbeat', 'exited', 'heartbeat removed', 'scenario-start']);

/**
 * Where an event of a chaos timeline belongs in the picture: `cluster` (the controller's detection and
 * maps, a new leader), `recovery` (runs processed again), `fault` (what the scenario did: signals, NATS
 * or store outages, clock steps, and any kind not known here), or undefined for routine bookkeeping.
 */
export function timelineSection(kind: string): 'fault' | 'cluster' | 'recovery' | undefined {
  if (ROUTINE.has(kind)) return undefined;
  if (/^detection|^map v|leader/.test(kind)) return 'cluster';
  if (/^first run|running again|^liveness/.test(kind)) return 'recovery';
  return 'fault';
}

/** A chaos report's timeline as a Mermaid picture: fault, detection and map, chambers running again. */
export function timelineChart(title: string, entries: readonly TimelineEntry[]): string {
  const events: TimelineEvent[] = [];
  for (const e of entries) {
    const section = timelineSection(e.kind);
    if (!section) continue;
    const text = section === 'fault' && e.target ? `${e.kind} ${e.target}` : section === 'cluster' && e.detail ? `${e.kind}, ${e.detail}` : e.target && section === 'recovery' ? `${e.kind} (${e.target})` : e.kind;
    events.push({ t: e.t, section, text });
  }
  return timeline(title, events);
}
