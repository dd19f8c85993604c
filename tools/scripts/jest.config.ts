export default {
  displayName: 'scripts',
  preset: '../../jest.preset.js',
};
