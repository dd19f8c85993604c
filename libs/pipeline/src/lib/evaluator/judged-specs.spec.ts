/**
 * A judged run's indicators are found from the model's keys (`judgedSpecs`), not by building every key
 * of the run's layout: checked against that plain definition (every SVID x window x statistic of the
 * layout, kept when the model charts it or checks it as a constant, keys over the store's limit
 * reported) on layouts made to trip a key parser: SVIDs and step names holding `@` and `:`, names
 * that are suffixes of each other, SVIDs long enough to exceed the limit, model keys of other recipes
 * and of SVIDs the run does not have.
 */
import fc from 'fast-check';
import { RECORD_LIMITS } from '@defender/contracts';
import { DEFAULT_MONITOR_STATISTICS, type MonitorConfig, type MonitorModel, type MonitorSpec } from '@defender/defense-rules';
import { createTrace } from '@defender/uchart';
import { judgedSpecs, phaseOneSpecs } from './monitor-stage';

const LIMIT = RECORD_LIMITS.indicatorKey;
const CONSTANT_CHECKS = /:(min|max|mean|max-mean|mean-min)$/;

interface Layout {
  readonly prefix: string;
  readonly svids: readonly string[];
  readonly steps: readonly string[];
  readonly statistics: readonly string[];
  readonly despike: boolean;
}

function traceOf(layout: Layout) {
  const svids = new Map(layout.svids.map((s) => [s, Float64Array.from({ length: 4 * layout.steps.length }, (_, i) => i)]));
  return createTrace({ runId: 'r1', timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 }, svids, steps: layout.steps.map((name, i) => ({ name, startIndex: 4 * i })) });
}

function configOf(layout: Layout): MonitorConfig {
  return { svids: '*', windows: 'steps', segments: 4, statistics: layout.statistics, despike: layout.despike } as unknown as MonitorConfig;
}

/** Every key of the layout, in monitorSpecs' order (SVID, window, statistic). */
function layoutKeys(layout: Layout): { key: string; svid: string; window: string; statistic: string }[] {
  const out: { key: string; svid: string; window: string; statistic: string }[] = [];
  for (const svid of layout.svids)
    for (const window of layout.steps)
      for (const statistic of layout.statistics) out.push({ key: `${layout.prefix}m/${svid}@${window}:${statistic}`, svid, window, statistic });
  return out;
}

/** The definition: the layout's keys the model judges, each once, and the ones over the limit reported. */
function reference(layout: Layout, model: Pick<MonitorModel, 'variables' | 'notCharted'>) {
  const needed = new Set(model.variables);
  for (const nc of model.notCharted) if (nc.reason === 'constant' && CONSTANT_CHECKS.test(nc.key)) needed.add(nc.key);
  const skipped: { indicatorKey: string; reason: string }[] = [];
  const wanted: MonitorSpec[] = [];
  const keys: string[] = [];
  for (const k of layoutKeys(layout)) {
    if (k.key.length > LIMIT) {
      skipped.push({ indicatorKey: k.key.slice(0, LIMIT), reason: `key-too-long: over ${LIMIT} characters` });
      continue;
    }
    if (!needed.has(k.key)) continue;
    keys.push(k.key);
    wanted.push({
      key: k.key.slice(layout.prefix.length),
      svid: k.svid,
      windowName: k.window,
      window: { kind: 'step', step: k.window },
      statistic: k.statistic,
      ...(layout.despike ? { filter: 'median3' } : {}),
    } as MonitorSpec);
  }
  return { keys, wanted, skipped };
}

/** Names from a small alphabet with the separators in it, so they collide and end in each other. */
const name = fc.string({ unit: fc.constantFrom('a', 'b', '@', ':'), minLength: 1, maxLength: 4 });

const layoutArb: fc.Arbitrary<Layout> = fc.record({
  prefix: fc.oneof(fc.constant('R1|'), name.map((n) => `${n}|`)),
  svids: fc.uniqueArray(fc.oneof({ weight: 6, arbitrary: name }, { weight: 1, arbitrary: fc.integer({ min: LIMIT - 16, max: LIMIT }).map((n) => 'x'.repeat(n)) }), {
    minLength: 1,
    maxLength: 6,
  }),
  steps: fc.uniqueArray(name, { minLength: 1, maxLength: 3 }),
  statistics: fc.shuffledSubarray([...DEFAULT_MONITOR_STATISTICS], { minLength: 1 }),
  despike: fc.boolean(),
});

/** A model charting and checking some of the layout's keys, plus keys no run of this layout has. */
const caseArb = layoutArb.chain((layout) => {
  const keys = layoutKeys(layout)
    .map((k) => k.key)
    .filter((k) => k.length <= LIMIT);
  const foreign = fc.oneof(
    name.map((n) => `${layout.prefix}m/${n}@${layout.steps[0]}:mean`),
    name.map((n) => `other|m/${n}@${n}:max`),
    name.map((n) => `${layout.prefix}${n}`),
  );
  const key = keys.length > 0 ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...keys) }, { weight: 1, arbitrary: foreign }) : foreign;
  return fc.record({
    layout: fc.constant(layout),
    variables: fc.array(key, { maxLength: 20 }),
    notCharted: fc.array(fc.record({ key, reason: fc.constantFrom('constant', 'missing', 'numerical-noise') as fc.Arbitrary<'constant' | 'missing' | 'numerical-noise'> }), { maxLength: 20 }),
  });
});

describe('judgedSpecs', () => {
  it('selects exactly the layout keys the model judges, in monitorSpecs order, and reports the keys over the limit', () => {
    fc.assert(
      fc.property(caseArb, ({ layout, variables, notCharted }) => {
        const model = { variables, notCharted } as unknown as MonitorModel;
        const skipped: { indicatorKey: string; reason: string }[] = [];
        const got = judgedSpecs(traceOf(layout), configOf(layout), layout.prefix, model, skipped);
        const want = reference(layout, model);
        expect(got.keys).toEqual(want.keys);
        expect(got.wanted).toEqual(want.wanted);
        expect(skipped).toEqual(want.skipped);
        expect(got.windows).toEqual([]);
        expect(got.windowOfSpec).toEqual(got.wanted.map(() => -1));
      }),
      { numRuns: 500, seed: 24 },
    );
  });

  it('agrees with Phase I on the keys a model of every Phase I key judges', () => {
    fc.assert(
      fc.property(layoutArb, (layout) => {
        const skippedOne: { indicatorKey: string; reason: string }[] = [];
        const one = phaseOneSpecs(traceOf(layout), configOf(layout), layout.prefix, skippedOne);
        const skipped: { indicatorKey: string; reason: string }[] = [];
        const judged = judgedSpecs(traceOf(layout), configOf(layout), layout.prefix, { variables: one.keys, notCharted: [] } as unknown as MonitorModel, skipped);
        expect(judged.keys).toEqual(one.keys);
        expect(judged.wanted).toEqual(one.wanted);
        expect(skipped).toEqual(skippedOne);
      }),
      { numRuns: 300, seed: 7 },
    );
  });
});
