export default {
  displayName: 'membership',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/membership',
};
