export default {
  displayName: 'backoff',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/backoff',
};
