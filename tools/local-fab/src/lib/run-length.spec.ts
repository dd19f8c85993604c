import { generateFab, parseCli, schedule } from '@defender/fab-sim';
import { describeRunLength, FULL_RUN, runLengthArgs, SHORT_RUN } from './run-length';

describe("the local fab's run length (issue 52, item 5: the first summary came after ~27 minutes)", () => {
  it.each<[string, Parameters<typeof runLengthArgs>[0], string[]]>([
    ['by default: the short run', {}, ['--speed', '600', '--runs', '50']],
    ["--full: nothing passed on, the simulator's defaults", { full: true }, []],
    ['--runs given: kept, the short speed', { runs: '60' }, ['--speed', '600', '--runs', '60']],
    ['--speed given: kept, the short run length', { speed: 'max' }, ['--speed', 'max', '--runs', '50']],
    ['--full --runs 60: the runs given, the simulator\'s speed', { full: true, runs: '60' }, ['--runs', '60']],
  ])('%s', (_what, options, args) => {
    expect(runLengthArgs(options)).toEqual(args);
  });

  it("FULL_RUN is what the simulator does without --runs / --speed", () => {
    const o = parseCli(['run'], {});
    expect({ runs: o.runs, speed: o.speed }).toEqual(FULL_RUN);
  });

  it('the short run: every excursion kind fits after Phase I, and the paced part of the default small fab is a few minutes, the full run ~23', () => {
    const o = parseCli(['run', '--runs', String(SHORT_RUN.runs)], {});
    expect(SHORT_RUN.runs - o.warmupRuns).toBeGreaterThanOrEqual(20);
    // The longest excursion (a drift) lasts 10 runs and starts at run 35 at the earliest.
    expect(SHORT_RUN.runs - 10).toBeGreaterThanOrEqual(o.excursionAfter);
    const fab = generateFab({ tools: o.tools, seed: o.seed, profile: o.profile });
    const pacedMinutes = (runs: number, speed: number) => {
      const paced = schedule(fab, runs, o.seed).filter((e) => e.run >= o.warmupRuns);
      return ((paced[paced.length - 1]?.t ?? 0) - (paced[0]?.t ?? 0)) / speed / 60;
    };
    expect(pacedMinutes(SHORT_RUN.runs, SHORT_RUN.speed)).toBeLessThan(3);
    expect(pacedMinutes(FULL_RUN.runs, FULL_RUN.speed)).toBeGreaterThan(20);
  });

  it('the start banner says which run it is', () => {
    expect(describeRunLength({})).toMatch(/^the short run: 50 runs per chamber at speed 600/);
    expect(describeRunLength({ full: true })).toMatch(/^the full run: 80 runs per chamber at speed 100/);
    expect(describeRunLength({ runs: '60' })).toBe('fab-sim run --speed 600 --runs 60');
  });
});
