import { Logger } from '@aws-lambda-powertools/logger';

/** One logger per process, JSON, service `llmcap`; handlers add the correlation id per request. */
export const logger = new Logger({ serviceName: 'llmcap' });
