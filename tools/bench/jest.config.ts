export default {
  displayName: 'bench',
  preset: '../../jest.preset.js',
  // Pure logic of the benchmarks and the scripts' command lines (the benches themselves are scripts, not tests).
};
