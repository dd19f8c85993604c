/** The production maps: one mapping per generated line, to its TypeScript file and line; no sources' text. */
export const PRODUCTION_DEVTOOL: 'nosources-cheap-module-source-map';
/** `nx serve`'s development builds: column-level mappings and the sources' text, for debuggers. */
export const DEVELOPMENT_DEVTOOL: 'source-map';
/** The devtool of a build configuration (`production` when none is named). */
export function devtoolFor(configurationName: string | undefined): string;
/** The devtool of the build Nx is running (its NX_TASK_TARGET_CONFIGURATION; `production` when none). */
export function devtoolOfTask(env?: Record<string, string | undefined>): string;
/**
 * Runs the app (`node --enable-source-maps <output path>/main.js`, in the workspace root) after every
 * successful build of `webpack-cli build --watch --env serve`, stopping the previous one with SIGTERM
 * first (`nx serve <app>`).
 */
export class RunAppPlugin {
  apply(compiler: import('webpack').Compiler): void;
}
