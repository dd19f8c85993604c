// Workspace webpack preset, as jest.preset.js is for Jest: what every app's webpack.config.js takes
// from the workspace. The apps' source maps (NxAppWebpackPlugin's `sourceMap`, a devtool), and the
// plugin that runs an app under `nx serve`.
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

const { spawn } = require('node:child_process');
const { join } = require('node:path');

/** The workspace root (this file's directory), where `nx serve` runs an app, as `nx` itself runs. */
const WORKSPACE_ROOT = __dirname;

/** The production maps: one mapping per generated line, to its TypeScript file and line; no sources' text. */
const PRODUCTION_DEVTOOL = 'nosources-cheap-module-source-map';
/** `nx serve`'s development builds: column-level mappings and the sources' text, for debuggers. */
const DEVELOPMENT_DEVTOOL = 'source-map';

/** The devtool of a build configuration (`production` when none is named). */
function devtoolFor(configurationName) {
  return configurationName === 'development' ? DEVELOPMENT_DEVTOOL : PRODUCTION_DEVTOOL;
}

/**
 * The devtool of the build Nx is running: `nx build <app>` (configuration `production` by default) or
 * `nx serve <app>` (`development`), which Nx passes to webpack-cli as NX_TASK_TARGET_CONFIGURATION.
 */
function devtoolOfTask(env = process.env) {
  return devtoolFor(env.NX_TASK_TARGET_CONFIGURATION);
}

/**
 * Runs the app after every successful build of `webpack-cli build --watch --env serve` (`nx serve
 * <app>`), as the `@nx/js:node` executor did for the `@nx/webpack:webpack` one: after the first build,
 * `node --enable-source-maps <output path>/main.js` in the workspace root with this process's
 * environment; after each later one, the running app is stopped with SIGTERM (it drains, as under
 * Kubernetes), awaited, and the new bundle started. Builds that end while the app drains start one
 * app, the newest bundle. A failed build leaves the running app alone; the app is stopped when the
 * watch ends.
 */
class RunAppPlugin {
  apply(compiler) {
    const name = 'RunAppPlugin';
    const log = compiler.getInfrastructureLogger(name);
    const stopping = new WeakSet();
    let app; // the app started last, running or not
    let restarting = false;
    let again = false; // a build succeeded while the app was being stopped
    let closed = false;

    const stop = () =>
      new Promise((resolve) => {
        if (!app || app.exitCode !== null || app.signalCode !== null) return resolve();
        app.once('exit', () => resolve());
        if (!stopping.has(app)) {
          stopping.add(app);
          app.kill('SIGTERM');
        }
      });
    const start = () => {
      const main = join(compiler.options.output.path, 'main.js');
      const child = spawn(process.execPath, ['--enable-source-maps', main], { cwd: WORKSPACE_ROOT, stdio: 'inherit' });
      child.once('error', (err) => log.error(`cannot start ${main}: ${err.message}`));
      child.once('exit', (code, signal) => {
        if (!stopping.has(child)) log.warn(`${main} exited (${signal ?? `code ${code}`}); the next successful build starts it again`);
      });
      app = child;
    };
    const restart = async () => {
      if (restarting) {
        again = true;
        return;
      }
      restarting = true;
      do {
        again = false;
        await stop();
      } while (again);
      restarting = false;
      if (!closed) start();
    };

    compiler.hooks.done.tap(name, (stats) => {
      if (stats.hasErrors()) {
        log.warn('build failed: the running app stays until a build succeeds');
        return;
      }
      void restart();
    });
    compiler.hooks.watchClose.tap(name, () => {
      closed = true;
      void stop();
    });
  }
}

module.exports = { devtoolOfTask, devtoolFor, RunAppPlugin, PRODUCTION_DEVTOOL, DEVELOPMENT_DEVTOOL };
