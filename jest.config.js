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
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
      setupFiles: [...common.setupFiles, '<rootDir>/test/helpers/setup-fast-check.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      // The admitter a file's table stream drives (test/helpers/admitter.ts) stops with the file.
      setupFilesAfterEnv: [...common.setupFilesAfterEnv, '<rootDir>/test/helpers/stop-admitter.ts'],
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
    { ...common, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
  ],
  testTimeout: 60000,
  // Three test files at once on two cores: much of each integration file is waiting (child processes, DynamoDB
  // Local, the simulators' timers), and a third file fills those gaps (quiet machine, 2026-12-05: 2 workers 120 s,
  // 3 workers 105 s, 4 workers 113 s). Every file has its own ports, table and temp files, so order and company do
  // not matter. `-w N` (or `--runInBand`) on the command line overrides it.
  maxWorkers: 3,
  // A worker that has grown past this is replaced after its file: jest keeps each ended file's modules reachable
  // for a while, and a worker that ran 70 files had a 1.2-1.5 GB heap whose collection cost more CPU than a new
  // worker's start (2 workers: 127 s and 218 s of CPU without the limit, 120 s and 206 s with it).
  workerIdleMemoryLimit: '700MB',
  // How long jest waits for a worker to end after the run before it kills it and prints "A worker process has
  // failed to exit gracefully" (default 500 ms). Nothing of ours holds a worker: its event loop is empty and it
  // emits 'exit' within 5 ms of being told to end, but freeing a 600-800 MB process then takes 0.5-0.8 s on this
  // two-core machine under load (2026-12-06, test/integration/api with 2 workers: 545 and 794 ms), and jest
  // reported the slow exit as a leak. A worker that a leaked timer, socket or child really holds still never ends
  // and is still reported, 5 s after the run.
  workerGracefulExitTimeout: 5000,
};
