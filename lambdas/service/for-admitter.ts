import { createServices, type Dependencies } from '.';
import { admitterService } from './admitter';

/**
 * The services as the admitter Lambda wires them: the defaults, and the admitter on them. Only the admitter
 * (and tests that drive it) builds it here, so that the API's bundle carries none of its code (the moves,
 * surge-back), which its cold start would load for nothing.
 */
export function createAdmitterServices(over: Partial<Dependencies> = {}) {
  const services = createServices(over);
  return { ...services, admitter: admitterService(services.deps, services) };
}

export type AdmitterServices = ReturnType<typeof createAdmitterServices>;
