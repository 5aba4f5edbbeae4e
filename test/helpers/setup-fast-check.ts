// Property tests are deterministic in CI (a fixed seed); set FC_SEED to explore other inputs locally. The property
// tests are unit tests, so only the unit project loads fast-check before every file: the integration and infra
// files use none, and it cost each ~20 ms. The fuzz test draws its own seed (soak/lib/fuzz.ts).
import * as fc from 'fast-check';

fc.configureGlobal({ seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261202 });
