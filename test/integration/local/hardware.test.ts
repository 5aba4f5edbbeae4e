import { hardwareFacts } from '../../../lambdas/aws/hardware';
import type { ControlPlane } from '../../../local/control-plane';
import { testControlPlane } from '../../helpers/control-plane';

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('hw');
});
afterAll(() => cp.stop());

it('points the Lambdas at the simulator for instance types and prices through the SDK endpoint variables', async () => {
  expect(process.env.AWS_ENDPOINT_URL_EC2).toBe(cp.sim.endpoint);
  expect(process.env.AWS_ENDPOINT_URL_PRICING).toBe(cp.sim.endpoint);
  const { facts, price } = await hardwareFacts().lookup('p5.48xlarge');
  expect(facts).toMatchObject({ vcpus: 192, accelerator: { kind: 'nvidia', name: 'H100', count: 8 } });
  expect(price?.perHour).toBe(55.04);
});
