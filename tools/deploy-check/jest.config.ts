export default {
  displayName: 'deploy-check',
  preset: '../../jest.preset.js',
  // Renders kustomize overlays (kubectl) and type-checks the rendered objects: seconds, not ms.
  testTimeout: 120_000,
};
