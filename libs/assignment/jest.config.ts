export default {
  displayName: 'assignment',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/assignment',
};
