export default {
  displayName: 'election-agent',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/election-agent',
  globalSetup: '<rootDir>/../../tools/infra/src/jest/global-setup.ts',
  globalTeardown: '<rootDir>/../../tools/infra/src/jest/global-teardown.ts',
  // The run's nats-server requires mutual TLS: every agent and test connection verifies it and
  // presents a client certificate (a PKI made at test time, tools/infra/src/tls.ts).
  globals: { infra: ['nats'], natsTls: 'mutual' },
};
