import { clusterSubnets, hardwareFacts } from '../aws/hardware';
import { invokeAsync } from '../aws/lambda';
import { createServices, type Dependencies, type Services } from '.';

/**
 * The services as the API Lambda wires them: the defaults, and the Lambda invoker that POST /v1/reconcile
 * queues a pass with, and the hardware facts compute writes are resolved against. Only the API's bundle imports
 * this module, so only its role needs lambda:InvokeFunction, ec2:DescribeInstanceTypes, pricing:GetProducts and
 * the cluster's eks:DescribeCluster.
 */
export function createApiServices(over: Partial<Dependencies> = {}): Services {
  return createServices({ invoke: invokeAsync, hardware: apiHardware, ...over });
}

function apiHardware() {
  const hw = hardwareFacts();
  return {
    region: hw.region,
    lookup: (t: string) => hw.lookup(t),
    offeredFamilies: (f: readonly string[]) => hw.offeredFamilies(f),
    clusterSubnets: () => clusterSubnets(),
  };
}
