export default {
  displayName: 'contracts',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/contracts',
};
