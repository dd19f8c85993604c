const { join } = require('node:path');
const { NxAppWebpackPlugin } = require('@nx/webpack/app-plugin');
const { devtoolOfTask, RunAppPlugin } = require('../../webpack.preset');

// Node bundle of this app only, built by `nx build dashboard` (webpack-cli, target inferred by
// @nx/webpack/plugin) and rebuilt on change by `nx serve dashboard`. node_modules stay external
// (native addons load at runtime) and the generated package.json lists only the production
// dependencies this app uses, for its container image.
module.exports = (env = {}) => ({
  output: { path: join(__dirname, '../../dist/apps/dashboard'), clean: true },
  plugins: [
    new NxAppWebpackPlugin({
      target: 'node',
      compiler: 'tsc',
      main: join(__dirname, 'src/main.ts'),
      tsConfig: join(__dirname, 'tsconfig.app.json'),
      // The SQLite store runs on a worker thread (libs/store ThreadedSqliteStore): its entry is a
      // second bundle, sqlite-store-thread.js next to main.js.
      additionalEntryPoints: [{ entryName: 'sqlite-store-thread', entryPath: join(__dirname, '../../libs/store/src/lib/sqlite/sqlite-store-thread.ts') }],
      // The browser's files, served as they are (no bundling).
      assets: [{ glob: '**/*', input: join(__dirname, 'src/assets'), output: 'assets' }],
      generatePackageJson: true,
      externalDependencies: 'all',
      outputHashing: 'none',
      optimization: false,
      sourceMap: devtoolOfTask(),
      // `webpack-cli build --watch` (nx serve): keep modules in memory between rebuilds.
      watch: env.WEBPACK_WATCH === true,
    }),
    // `nx serve`: run the app after each build.
    ...(env.serve ? [new RunAppPlugin()] : []),
  ],
});
