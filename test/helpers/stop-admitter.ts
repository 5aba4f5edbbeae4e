import { testAdmitter } from './admitter';

// A file's admitter polls its table's stream until stopped: stopped here, so the worker can move on.
afterAll(async () => {
  await testAdmitter()?.stop();
});
