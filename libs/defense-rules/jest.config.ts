export default {
  displayName: 'defense-rules',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/defense-rules',
};
