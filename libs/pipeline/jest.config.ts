export default {
  displayName: 'pipeline',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/pipeline',
};
