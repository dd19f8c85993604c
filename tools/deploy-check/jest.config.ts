export default {
  displayName: 'deploy-check',
  preset: '../../jest.preset.js',
};
