const { join } = require('node:path');
const { composePlugins, withNx } = require('@nx/webpack');
const { withSourceMaps } = require('../../webpack.preset');

// Node bundle of this app only. Options (main, tsConfig, outputPath, assets, generatePackageJson)
// live in project.json so `nx build` and `nx serve --watch` share them; node_modules stay external
// (native addons load at runtime) and the generated package.json lists only the production
// dependencies this app uses, for its container image.
module.exports = composePlugins(withNx({ target: 'node' }), withSourceMaps(), (config) => {
  // The SQLite store runs on a worker thread (libs/store ThreadedSqliteStore): its entry is a second
  // bundle, sqlite-store-thread.js next to main.js. The heartbeat thread (ADR 0012) is a third.
  config.entry = {
    ...config.entry,
    'sqlite-store-thread': [join(__dirname, '../../libs/store/src/lib/sqlite/sqlite-store-thread.ts')],
    'heartbeat-thread': [join(__dirname, 'src/app/membership/heartbeat-thread.worker.ts')],
  };
  return config;
});
