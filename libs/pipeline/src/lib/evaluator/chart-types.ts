/** Limit-set chart type of one part of a monitor model too large for one limit set (monitor-stage.ts). */
export const MONITOR_PART_CHART_TYPE = 'monitor-part';
