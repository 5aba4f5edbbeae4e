import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { logger } from '../shared/logger';
import { handle } from './app';
import type { Event } from './http';

/** The api Lambda: middy adds the Lambda context and the request's correlation id to every log line. */
export const handler = middy(async (event: Event) => handle(event))
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .before((request) => {
    logger.setCorrelationId(request.event.requestContext?.requestId);
  });
