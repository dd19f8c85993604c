export default {
  displayName: 'malloc',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/malloc',
};
