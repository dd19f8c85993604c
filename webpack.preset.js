// Workspace webpack preset, as jest.preset.js is for Jest: what every app's webpack.config.js composes
// after withNx. Today, the apps' source maps.
//
// The images run `node --enable-source-maps`, so a stack trace names the TypeScript file and line.
// Node keeps each loaded map in memory and, at the first stack trace, expands every mapping into an
// array of its own: for the defender's full map (column-level mappings of 28,000 generated lines,
// plus the sources' text) that was 21 MB of the main heap (6.6 MB payload + 14.2 MB parsed), found in
// a heap snapshot at fab scale (bench:fab, FAB_HEAP_SNAPSHOTS; ADR 0014, update of 2026-11-29).
// A line-level map without the sources' text still gives file and line (not the column) and costs
// the heap about 2.7 MB. Builds for `nx serve` (configuration `development`) keep full maps for
// debuggers.
'use strict';

/** The production maps: one mapping per generated line, to its TypeScript file and line; no sources' text. */
const PRODUCTION_DEVTOOL = 'nosources-cheap-module-source-map';
/** `nx serve`'s development builds: column-level mappings and the sources' text, for debuggers. */
const DEVELOPMENT_DEVTOOL = 'source-map';

/** The devtool of a build configuration (`production` when none is named). */
function devtoolFor(configurationName) {
  return configurationName === 'development' ? DEVELOPMENT_DEVTOOL : PRODUCTION_DEVTOOL;
}

/** A composable Nx webpack plugin that sets the devtool from the build's configuration. */
function withSourceMaps() {
  return (config, ctx) => {
    config.devtool = devtoolFor(ctx && ctx.context ? ctx.context.configurationName : process.env.NX_TASK_TARGET_CONFIGURATION);
    return config;
  };
}

module.exports = { withSourceMaps, devtoolFor, PRODUCTION_DEVTOOL, DEVELOPMENT_DEVTOOL };
