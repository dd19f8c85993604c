export default {
  displayName: 'benchmarks',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  // Pure logic of the benchmarks and the scripts' command lines (the benches themselves are scripts, not tests).
  testTimeout: 180_000,
};
