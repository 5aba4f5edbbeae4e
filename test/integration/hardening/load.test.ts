import { P } from '../../../soak/lib/fixture';
import { invokeInProcess } from '../../../soak/lib/invoke';
import { runLoad } from '../../../soak/lib/load';
import { testAdmitter } from '../../helpers/admitter';
import { testApi } from '../../helpers/api';

/**
 * The short load run (npm test): 24 in-process clients for 3 s, some 400 requests, racing on shared and private
 * resources; npm run soak runs more over HTTP, for longer.
 */

beforeAll(async () => {
  await testApi({ admins: [P.platform] });
});

it('holds concurrent readers and writers with no error beyond 409s, and everything adds up afterwards', async () => {
  const r = await runLoad({
    invoke: invokeInProcess,
    clients: 24,
    seconds: 3,
    settle: () => testAdmitter()!.settled(),
  });
  console.log(JSON.stringify(r, null, 1));
  expect(r.errors).toEqual([]);
  expect(r.inconsistencies).toEqual([]);
  expect(r.requests).toBeGreaterThan(50);
}, 60_000);
