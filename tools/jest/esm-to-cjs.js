// Jest transformer for ESM-only packages in node_modules (NestJS 12 ships "type": "module"): compiles
// their import/export to CommonJS so Jest's CommonJS loader can require them, with @swc/core (already
// the workspace's TypeScript runner). Not ts-jest: TypeScript leaves `import.meta.url` as it is in a
// CommonJS module (a SyntaxError at load), swc rewrites it to the file's URL.
// Used by jest.preset.js for the packages listed in ESM_ONLY_PACKAGES there.
const { createHash } = require('node:crypto');
const { transformSync, version } = require('@swc/core');

const OPTIONS = {
  swcrc: false,
  configFile: false,
  sourceMaps: true,
  jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } },
  module: { type: 'commonjs', ignoreDynamic: false },
};

module.exports = {
  process(source, filename) {
    const { code, map } = transformSync(source, { ...OPTIONS, filename });
    return { code, map };
  },
  getCacheKey(source, filename) {
    return createHash('sha1')
      .update(version)
      .update(JSON.stringify(OPTIONS))
      .update(filename)
      .update('\0')
      .update(source)
      .digest('hex');
  },
};
