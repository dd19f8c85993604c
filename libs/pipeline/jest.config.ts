export default {
  displayName: 'pipeline',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/pipeline',
};
