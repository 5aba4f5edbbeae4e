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
  setupFilesAfterEnv: ['<rootDir>/test/helpers/release-async-storage.ts'],
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
  // Two test files at once: the serial suite already keeps about one core busy (jest's default on two cores is
  // one worker, i.e. in band), and much of each integration file is waiting (child processes, DynamoDB Local,
  // SDK backoff, the simulators' timers), so two workers fill two cores without starving each other the way
  // three did. Every file has its own ports, table and temp files, so order and company do not matter.
  // `-w N` (or `--runInBand`) on the command line overrides it.
  maxWorkers: 2,
};
