import { Logger } from '@aws-lambda-powertools/logger';
import { SERVICE_NAME } from '../domain/telemetry';

/** One logger per process, JSON, service `llmcap`; handlers add the correlation id per request. */
export const logger = new Logger({ serviceName: SERVICE_NAME });
