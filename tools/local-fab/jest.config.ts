export default {
  displayName: 'local-fab',
  preset: '../../jest.preset.js',
  // The whole local fab from the built bundles (nx builds them first: see project.json), driven
  // through its dashboard in headless Chromium. It starts its own nats-server; one file at a time.
  testTimeout: 300_000,
  maxWorkers: 1,
};
