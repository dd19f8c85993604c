/**
 * The strategy for chambers without one: the mean and the standard deviation of every SVID over the
 * whole context, individuals charts with moving-range sigma (Phase I: 20 runs, out-of-control runs
 * excluded), the Western Electric rules, ALARM; 2 alarms in the last 5 runs -> HOLD_CHAMBER.
 */
export const DEFAULT_STRATEGY_DOCUMENT: Readonly<Record<string, unknown>> = {
  schemaVersion: 1,
  name: 'default',
  indicators: [
    { id: 'mean', svid: '*', statistic: 'mean', rules: ['western-electric'] },
    { id: 'std', svid: '*', statistic: 'std', rules: ['western-electric'] },
  ],
  escalation: [{ alarms: 2, withinRuns: 5, action: 'HOLD_CHAMBER' }],
};

/**
 * The chamber monitor over every SVID x recipe step (equal time windows without step markers) x 11
 * statistics of the despiked samples — T² and SPE on at most 4 principal components, raw and residual
 * limits per indicator, a check of constant indicators — around a centre that follows slow in-control
 * drift, with one in-control ARL of 370 runs for the whole chamber, Phase I of 30 runs; one alarm per
 * run listing every violation; a hold after 3 alarmed runs within 5. (A MEWMA on the scores is
 * available; measured on bench:detection it caught no more and alarmed after every maintenance.)
 */
export const MONITOR_STRATEGY_DOCUMENT: Readonly<Record<string, unknown>> = {
  schemaVersion: 1,
  name: 'monitor',
  monitor: {},
  budget: { alarmArl: 370 },
  escalation: [{ alarms: 3, withinRuns: 5, action: 'HOLD_CHAMBER' }],
};
