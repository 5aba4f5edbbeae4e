// Three projects so that `npm test` runs them all and each can be run alone while working.
const transform = { '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { target: 'es2022' } }] };
// middy, the OpenAPI validator and @kubernetes/client-node (with openid-client, oauth4webapi, jose) are
// ESM-only; swc turns them into CommonJS like our own files.
const common = {
  transform,
  transformIgnorePatterns: [
    '/node_modules/(?!(@middy|@seriousme|@kubernetes/client-node|openid-client|oauth4webapi|jose)/)',
  ],
  testEnvironment: 'node',
  setupFiles: ['<rootDir>/test/helpers/setup-env.ts'],
};

module.exports = {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
    { ...common, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
  ],
  testTimeout: 60000,
};
