export default {
  displayName: 'arl',
  preset: '../../jest.preset.js',
  // The command line only: the simulation itself is `npm run arl` (its reference check is its test).
  testTimeout: 60_000,
};
