// Jest transformer for the workspace's TypeScript: transpile only, with @swc/core (the workspace's
// TypeScript runner, tools/scripts/register.js), as the tests were with ts-jest's isolatedModules
// mode but several times cheaper per file. Types are checked by each project's `typecheck` target.
// Decorators are the legacy ones with metadata (tsconfig.base.json: experimentalDecorators,
// emitDecoratorMetadata), which Nest's dependency injection reads; `jest.mock` calls are hoisted
// above the imports as ts-jest and babel-jest do (swc's jest transform).
const { createSwcTransformer } = require('./swc-transformer');

const OPTIONS = {
  swcrc: false,
  configFile: false,
  sourceMaps: 'inline',
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    keepClassNames: true,
    transform: {
      legacyDecorator: true,
      decoratorMetadata: true,
      // TypeScript's default for an ES2022 target (tsconfig.base.json sets no useDefineForClassFields).
      useDefineForClassFields: true,
      hidden: { jest: true },
    },
  },
  module: { type: 'commonjs', ignoreDynamic: false },
};

module.exports = createSwcTransformer(OPTIONS);
