// Test support (not part of the app's bundle): the page's markup functions, and readers of markup.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';

/** What the tests call of `assets/render.js` (plain browser JavaScript: API JSON in, markup out). */
export interface PageRender {
  yTicks(lo: number, hi: number, count?: number): number[];
  /** `events`: the chamber's equipment events (`ChamberDetail.events`), marked between the runs. */
  chartSvg(chart: unknown, events?: unknown): string;
  monitorSvg(monitor: unknown, stat: 'T2' | 'SPE' | 'MEWMA', events?: unknown): string;
  monitorCard(monitor: unknown, events?: unknown): string;
  runAlarmCard(alarm: unknown): string;
  alarmRow(item: unknown, fresh?: boolean): string;
  miniRow(item: unknown, fresh?: boolean): string;
  chamberAlarmRow(alarm: unknown): string;
  clusterStateFact(cluster: unknown): { value: string; label: string; title: string };
  mapWeightUnit(cluster: unknown): 'load' | 'samples' | null;
  weightText(value: number | null, unit: 'load' | 'samples' | null): string;
  weightName(unit: 'load' | 'samples' | null): string;
  memoryFact(memory: unknown): string;
}

/** Runs `assets/render.js` as the browser does (one script that sets `window.DefenderRender`) in a fresh context. */
export function loadPageRender(): PageRender {
  const file = join(__dirname, '..', 'assets', 'render.js');
  const window: { DefenderRender?: PageRender } = {};
  runInNewContext(readFileSync(file, 'utf8'), { window }, { filename: file });
  if (!window.DefenderRender) throw new Error(`${file} did not set window.DefenderRender`);
  return window.DefenderRender;
}

const ENTITIES: Readonly<Record<string, string>> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" };

/** The text a user reads in a piece of markup: tags dropped, entities decoded, white space collapsed. */
export function textOf(html: string): string {
  return html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e] ?? e)
    .replace(/\s+/g, ' ')
    .trim();
}

/** Table rows of `html`, each as the text of its cells. */
export function rowsOf(html: string): string[][] {
  return [...html.matchAll(/<tr\b[^>]*>([\s\S]*?)<\/tr>/g)].map((row) => [...(row[1] ?? '').matchAll(/<td\b[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => textOf(cell[1] ?? '')));
}

/** Every element of `html` (its opening tag): the tag name and its attributes, in document order. */
export function elementsOf(html: string): { tag: string; attrs: Record<string, string> }[] {
  return [...html.matchAll(/<([a-z]+)\b([^>]*)>/g)].map((m) => ({
    tag: m[1] as string,
    attrs: Object.fromEntries([...(m[2] ?? '').matchAll(/([a-z-]+)="([^"]*)"/g)].map((a) => [a[1] as string, textOf(a[2] ?? '')])),
  }));
}

/** The elements of `html` with `data-testid` = `id`, each as its attributes. */
export function byTestId(html: string, id: string): Record<string, string>[] {
  return elementsOf(html)
    .map((e) => e.attrs)
    .filter((attrs) => attrs['data-testid'] === id);
}
