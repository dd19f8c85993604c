export default {
  displayName: 'arl',
  preset: '../../jest.preset.js',
  // Its tests cover the command line only: the simulation itself is `npm run arl` (its reference check is its test).
};
