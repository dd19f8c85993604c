// Summarises a V8 CPU profile (from the defender's POST /debug/cpu-profile) by self time: per
// function and per source area. Frames of the webpack bundle (dist/apps/defender/main.js) are mapped
// back to their TypeScript sources through main.js.map.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileSummary {
  /** Profiled wall time, ms. */
  totalMs: number;
  /** Time not idle (program + GC + JS), ms. */
  busyMs: number;
  areas: { area: string; ms: number }[];
  functions: { fn: string; where: string; area: string; ms: number }[];
}

function loadMap(bundle: string): SourceMap | undefined {
  const file = `${bundle}.map`;
  if (!existsSync(file)) return undefined;
  try {
    return new SourceMap(JSON.parse(readFileSync(file, 'utf8')));
  } catch {
    return undefined;
  }
}

function cleanSource(src: string): string {
  return src
    .replace(/^webpack:\/\/\/?/, '')
    .replace(/^(\.\.\/)+/, '')
    .replace(/^\.\//, '');
}

/** Where a frame's code lives: a workspace file (mapped), a package, Node internals, or V8 itself. */
function locate(cf: CallFrame, bundle: string, map: SourceMap | undefined): { where: string; area: string } {
  if (!cf.url) {
    const special = cf.functionName.startsWith('(') ? cf.functionName : '(native / V8 builtin)';
    return { where: special, area: special };
  }
  if (cf.url.startsWith('node:')) return { where: cf.url, area: 'Node.js internals' };
  const path = cf.url.replace(/^file:\/\//, '');
  if (path === bundle && map) {
    const e = map.findEntry(cf.lineNumber, cf.columnNumber) as {
      originalSource?: string;
      originalLine?: number;
    };
    if (e.originalSource) {
      const src = cleanSource(e.originalSource);
      const area = /^(libs\/[^/]+|apps\/[^/]+)/.exec(src)?.[1] ?? src;
      return { where: `${src}:${(e.originalLine ?? 0) + 1}`, area };
    }
    return { where: 'main.js (unmapped)', area: 'apps/defender (bundle)' };
  }
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  const pkg = nm?.[1];
  if (pkg)
    return {
      where: `${pkg}${path.slice(path.indexOf(pkg) + pkg.length)}:${cf.lineNumber + 1}`,
      area: `node_modules/${pkg}`,
    };
  return { where: `${path}:${cf.lineNumber + 1}`, area: path };
}

/** Self time per function and per area, largest first. `bundle` is the absolute path of main.js. */
export function summariseProfile(profile: CpuProfile, bundle: string, top = 15): ProfileSummary {
  const map = loadMap(bundle);
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  samples.forEach((id, i) => {
    // A sample's time is the delta to the next sample.
    const dt = deltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, dt));
  });
  const byFn = new Map<string, { fn: string; where: string; area: string; us: number }>();
  const byArea = new Map<string, number>();
  let idleUs = 0;
  for (const n of profile.nodes) {
    const us = selfUs.get(n.id) ?? 0;
    if (us === 0) continue;
    if (n.callFrame.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const { where, area } = locate(n.callFrame, bundle, map);
    const fn = n.callFrame.functionName || '(anonymous)';
    const key = `${fn}|${where}`;
    const cur = byFn.get(key) ?? { fn, where, area, us: 0 };
    cur.us += us;
    byFn.set(key, cur);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
  }
  const totalUs = profile.endTime - profile.startTime;
  return {
    totalMs: totalUs / 1000,
    busyMs: (totalUs - idleUs) / 1000,
    areas: [...byArea.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([area, us]) => ({ area, ms: us / 1000 })),
    functions: [...byFn.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => ({ fn: f.fn, where: f.where, area: f.area, ms: f.us / 1000 })),
  };
}
