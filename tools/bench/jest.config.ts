export default {
  displayName: 'benchmarks',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  // Pure logic of the benchmarks only (the benches themselves are scripts, not tests).
};
