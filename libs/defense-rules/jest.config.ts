export default {
  displayName: 'defense-rules',
  preset: '../../jest.preset.js',
  rootDir: __dirname,
  coverageDirectory: '../../coverage/libs/defense-rules',
};
