// A Jest transformer on @swc/core with fixed options (tools/jest/swc-ts.js, tools/jest/esm-to-cjs.js).
// The cache key covers swc's version, the options, the file's path and its source.
const { createHash } = require('node:crypto');
const { transformSync, version } = require('@swc/core');

function createSwcTransformer(options) {
  const optionsText = JSON.stringify(options);
  return {
    process(source, filename) {
      const { code, map } = transformSync(source, { ...options, filename });
      return { code, map };
    },
    getCacheKey(source, filename) {
      return createHash('sha1').update(version).update(optionsText).update(filename).update('\0').update(source).digest('hex');
    },
  };
}

module.exports = { createSwcTransformer };
