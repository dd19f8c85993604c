export default {
  displayName: 'hashing',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/hashing',
};
