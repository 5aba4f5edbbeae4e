import { invokeAsync } from '../aws/lambda';
import { createServices, type Dependencies, type Services } from '.';

/**
 * The services as the API Lambda wires them: the defaults, and the Lambda invoker that POST /v1/reconcile
 * queues a pass with. Only the API's bundle imports this module, so only its role needs lambda:InvokeFunction.
 */
export function createApiServices(over: Partial<Dependencies> = {}): Services {
  return createServices({ invoke: invokeAsync, ...over });
}
