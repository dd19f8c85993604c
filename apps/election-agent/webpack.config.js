const { join } = require('node:path');
const { NxAppWebpackPlugin } = require('@nx/webpack/app-plugin');
const { devtoolOfTask, RunAppPlugin } = require('../../webpack.preset');

// Node bundle of this app only, built by `nx build election-agent` (webpack-cli, target inferred by
// @nx/webpack/plugin) and rebuilt on change by `nx serve election-agent`. node_modules stay external
// (native addons load at runtime) and the generated package.json lists only the production
// dependencies this app uses, for its container image.
module.exports = (env = {}) => ({
  output: { path: join(__dirname, '../../dist/apps/election-agent'), clean: true },
  plugins: [
    new NxAppWebpackPlugin({
      target: 'node',
      compiler: 'tsc',
      main: join(__dirname, 'src/main.ts'),
      tsConfig: join(__dirname, 'tsconfig.app.json'),
      assets: [
        { glob: '*.proto', input: join(__dirname, 'src/proto'), output: 'proto' },
        { glob: 'election/v1/*.proto', input: join(__dirname, '../../libs/election/proto'), output: 'proto' },
      ],
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
