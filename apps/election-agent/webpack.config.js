const { composePlugins, withNx } = require('@nx/webpack');
const { withSourceMaps } = require('../../webpack.preset');

// Node bundle of this app only. Options (main, tsConfig, outputPath, assets, generatePackageJson)
// live in project.json so `nx build` and `nx serve --watch` share them; node_modules stay external
// (native addons load at runtime) and the generated package.json lists only the production
// dependencies this app uses, for its container image.
module.exports = composePlugins(withNx({ target: 'node' }), withSourceMaps());
