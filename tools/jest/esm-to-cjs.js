// Jest transformer for ESM-only packages in node_modules (NestJS 12 ships "type": "module"): compiles
// their import/export to CommonJS so Jest's CommonJS loader can require them, with @swc/core (already
// the workspace's TypeScript runner). Not ts-jest: TypeScript leaves `import.meta.url` as it is in a
// CommonJS module (a SyntaxError at load), swc rewrites it to the file's URL.
// Used by jest.preset.js for the packages listed in ESM_ONLY_PACKAGES there.
const { createSwcTransformer } = require('./swc-transformer');

const OPTIONS = {
  swcrc: false,
  configFile: false,
  sourceMaps: true,
  jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } },
  module: { type: 'commonjs', ignoreDynamic: false },
};

module.exports = createSwcTransformer(OPTIONS);
