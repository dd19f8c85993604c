/** The production maps: one mapping per generated line, to its TypeScript file and line; no sources' text. */
export const PRODUCTION_DEVTOOL: 'nosources-cheap-module-source-map';
/** `nx serve`'s development builds: column-level mappings and the sources' text, for debuggers. */
export const DEVELOPMENT_DEVTOOL: 'source-map';
/** The devtool of a build configuration (`production` when none is named). */
export function devtoolFor(configurationName: string | undefined): string;
/** A composable Nx webpack plugin that sets the devtool from the build's configuration. */
export function withSourceMaps(): <C extends { devtool?: unknown }>(config: C, ctx?: { context?: { configurationName?: string } }) => C;
