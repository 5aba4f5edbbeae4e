import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isQueryRequest } from './autoscaling';
import { Ec2Error, ec2ErrorXml, handleEc2, isEc2Request } from './ec2';
import { handlePricing, isPricingRequest, PricingError } from './pricing';

/**
 * The read-only APIs answered from the snapshot of AWS's data: EC2 DescribeInstanceTypes (query protocol, told
 * from Auto Scaling's by its Version) and the Price List's GetProducts (JSON 1.1, told by its target); and EC2
 * DescribeSubnets, from the simulator's VPC.
 * Faults apply to them as to the other operations, with each service's own throttling and server errors.
 */

export interface AwsDataContext {
  log(line: string): void;
  /** The subnets of the simulated VPC (Simulator.subnets), for DescribeSubnets. */
  subnets(ids: readonly string[]): { id: string; zone: string; index: number }[];
  region: string;
  accountId: string;
  fault(operation: string): 'throttle' | 'server' | undefined;
  serverErrorType(): string | undefined;
}

/** Answers the request if it is one of these APIs' and returns true; false leaves it to the other routes. */
export function serveAwsData(
  req: IncomingMessage,
  raw: string,
  res: ServerResponse,
  ctx: AwsDataContext,
): boolean {
  const method = req.method ?? 'GET';
  const path = new URL(req.url ?? '/', 'http://sim').pathname;
  if (isQueryRequest(method, path, req.headers['content-type'])) {
    const form = new URLSearchParams(raw);
    if (!isEc2Request(form)) return false;
    serveEc2(form, res, ctx);
    return true;
  }
  const target = req.headers['x-amz-target'];
  if (method === 'POST' && isPricingRequest(target)) {
    servePricing(target, raw, res, ctx);
    return true;
  }
  return false;
}

function serveEc2(form: URLSearchParams, res: ServerResponse, ctx: AwsDataContext): void {
  const requestId = randomUUID();
  const { operation, handle } = handleEc2(form, ctx);
  try {
    const fault = ctx.fault(operation);
    if (fault === 'throttle') throw new Ec2Error(503, 'RequestLimitExceeded', 'Request limit exceeded.');
    if (fault === 'server')
      throw ctx.serverErrorType() === 'ServiceUnavailableException'
        ? new Ec2Error(503, 'Unavailable', "The server is overloaded and can't handle the request.")
        : new Ec2Error(500, 'InternalError', 'An internal error has occurred.');
    const xml = handle(requestId);
    ctx.log(`EC2 ${operation} 200`);
    res.writeHead(200, { 'content-type': 'text/xml;charset=UTF-8', 'x-amzn-requestid': requestId });
    res.end(xml);
  } catch (e) {
    if (!(e instanceof Ec2Error)) throw e;
    ctx.log(`EC2 ${operation} ${e.status} ${e.code}`);
    res.writeHead(e.status, { 'content-type': 'text/xml;charset=UTF-8', 'x-amzn-requestid': requestId });
    res.end(ec2ErrorXml(e, requestId));
  }
}

function servePricing(target: string, raw: string, res: ServerResponse, ctx: AwsDataContext): void {
  const requestId = randomUUID();
  const { operation, handle } = handlePricing(target, raw);
  const send = (status: number, body: unknown, errorType?: string) => {
    res.writeHead(status, {
      'content-type': 'application/x-amz-json-1.1',
      'x-amzn-requestid': requestId,
      ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
    });
    res.end(JSON.stringify(body));
  };
  try {
    const fault = ctx.fault(operation);
    if (fault === 'throttle') throw new PricingError('ThrottlingException', 'Rate exceeded');
    if (fault === 'server') throw new PricingError('InternalErrorException', 'An internal error occurred.');
    const out = handle();
    ctx.log(`Pricing ${operation} 200`);
    send(200, out);
  } catch (e) {
    if (!(e instanceof PricingError)) throw e;
    ctx.log(`Pricing ${operation} ${e.status} ${e.type}`);
    send(e.status, { __type: e.type, Message: e.message }, e.type);
  }
}
