import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderMarkdown, rerenderReports, type ScenarioReport } from './report';
import { timelineChart, timelineSection } from './timeline-chart';

const at = '2026-11-26T02:05:49.029Z';
const entries = [
  { t: 0, at, kind: 'scenario-start', target: 'crash-single' },
  { t: 1.501, at, kind: 'sigkill', target: 'pod-33', detail: '{"role":"defender"}' },
  { t: 1.506, at, kind: 'exited', target: 'pod-33' },
  { t: 3.236, at, kind: 'detection: map v4 published (crash)', target: 'controller-0', detail: '5 defenders, 11 chambers moved' },
  { t: 3.252, at, kind: 'first run processed by a new owner', target: 'tool002:ch2' },
  { t: 3.28, at, kind: 'every orphaned chamber with waiting runs running again', target: '9 chambers' },
];

describe('chaos timeline chart', () => {
  it('sorts events into fault, cluster and recovery, leaving the harness bookkeeping to the table', () => {
    expect(timelineSection('sigkill')).toBe('fault');
    expect(timelineSection('store-lock')).toBe('fault');
    expect(timelineSection('detection: map v4 published (crash)')).toBe('cluster');
    expect(timelineSection('map v2 published (takeover)')).toBe('cluster');
    expect(timelineSection('new leader answers')).toBe('cluster');
    expect(timelineSection('first run processed after NATS is back')).toBe('recovery');
    expect(timelineSection('every orphaned chamber with waiting runs running again')).toBe('recovery');
    for (const k of ['start', 'first heartbeat', 'exited', 'heartbeat removed', 'scenario-start']) expect(timelineSection(k)).toBeUndefined();
  });

  it('draws the crash, the map and the recovery in order', () => {
    expect(timelineChart('Single defender crash', entries).split('\n')).toEqual([
      '```mermaid',
      'timeline',
      '    title Single defender crash',
      '    section fault',
      '        1.50 s : sigkill pod-33',
      '    section cluster',
      '        3.24 s : detection map v4 published (crash), 5 defenders, 11 chambers moved',
      '    section recovery',
      '        3.25 s : first run processed by a new owner (tool002 ch2)',
      '        3.28 s : every orphaned chamber with waiting runs running again (9 chambers)',
      '```',
    ]);
  });

  it('every committed chaos report renders with its timeline picture above the table', () => {
    const dir = join(__dirname, '..', '..', '..', '..', 'docs', 'chaos');
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const md = renderMarkdown(JSON.parse(readFileSync(join(dir, f), 'utf8')) as ScenarioReport);
      const picture = md.indexOf('```mermaid\ntimeline');
      expect([f, picture > md.indexOf('## Timeline')]).toEqual([f, true]);
      expect([f, picture < md.indexOf('| t (s) | event |')]).toEqual([f, true]);
      const report = JSON.parse(readFileSync(join(dir, f), 'utf8')) as ScenarioReport;
      const sections = new Set(report.timeline.map((e) => timelineSection(e.kind)).filter((x) => x !== undefined));
      expect([f, [...md.matchAll(/^ {4}section (\w+)$/gm)].map((m) => m[1]).filter((x, i, a) => a.indexOf(x) === i).sort()]).toEqual([f, [...sections].sort()]);
    }
  });

  it('`npm run chaos -- render` rewrites each report\'s Markdown and the index from its JSON', () => {
    const docs = join(__dirname, '..', '..', '..', '..', 'docs', 'chaos');
    const dir = mkdtempSync(join(tmpdir(), 'chaos-render-'));
    try {
      for (const f of ['crash-single.json', 'store-outage.json']) copyFileSync(join(docs, f), join(dir, f));
      expect(rerenderReports(dir)).toEqual(['crash-single', 'store-outage']);
      expect(readFileSync(join(dir, 'crash-single.md'), 'utf8')).toContain('```mermaid\ntimeline');
      expect(readFileSync(join(dir, 'README.md'), 'utf8')).toContain('crash-single');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
