/**
 * The strategy for chambers without one, the `default` preset: the chamber monitor over every SVID x
 * recipe step (equal time windows without step markers) x the monitor's statistics of the despiked
 * samples — T² and SPE on at most 4 principal components, raw and residual limits per indicator, a
 * check of constant indicators — around a centre that follows slow in-control drift, with one
 * in-control ARL of 370 runs for the whole chamber, Phase I of 30 runs; one alarm per run listing
 * every violation; a hold after 3 alarmed runs within 5 (docs/adr/0005-chamber-monitor.md has the
 * measurements behind each choice). A MEWMA on the scores is available; measured on bench:detection
 * it caught no more and alarmed after every maintenance.
 */
export const DEFAULT_STRATEGY_DOCUMENT: Readonly<Record<string, unknown>> = {
  schemaVersion: 1,
  name: 'default',
  monitor: {},
  budget: { alarmArl: 370 },
  escalation: [{ alarms: 3, withinRuns: 5, action: 'HOLD_CHAMBER' }],
};

/**
 * The classic per-chart strategy (the product's default until the chamber monitor): the mean and the
 * standard deviation of every SVID over the whole context, individuals charts with moving-range sigma
 * (Phase I: 20 runs, out-of-control runs excluded), the Western Electric rules, ALARM; 2 alarmed runs
 * in the last 5 -> HOLD_CHAMBER. Every chart spends its own false-alarm rate, so a chamber with many
 * SVIDs alarms on a large share of its good runs (bench:detection); kept for chambers whose engineers
 * want exactly these charts.
 */
export const WESTERN_ELECTRIC_STRATEGY_DOCUMENT: Readonly<Record<string, unknown>> = {
  schemaVersion: 1,
  name: 'western-electric',
  indicators: [
    { id: 'mean', svid: '*', statistic: 'mean', rules: ['western-electric'] },
    { id: 'std', svid: '*', statistic: 'std', rules: ['western-electric'] },
  ],
  escalation: [{ alarms: 2, withinRuns: 5, action: 'HOLD_CHAMBER' }],
};
