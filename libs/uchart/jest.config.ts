export default {
  displayName: 'uchart',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/uchart',
};
