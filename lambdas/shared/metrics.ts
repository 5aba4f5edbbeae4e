import { Metrics } from '@aws-lambda-powertools/metrics';

/** EMF metrics under the llmcap namespace; the stage is a default dimension so stages never mix. */
export const metrics = new Metrics({
  namespace: 'llmcap',
  serviceName: 'llmcap',
  defaultDimensions: { stage: process.env.LLMCAP_STAGE ?? 'local' },
});
