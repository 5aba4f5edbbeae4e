/**
 * The model catalog (docs/design.md, The model catalog): declared models (config/catalog.yaml) plus models added at
 * runtime. Pure: the model service reads the state, calls a transition, and writes the one model it returns,
 * conditional on what the validation read (store/commit.ts), so the catalog in force validated as a whole.
 */
export * from './declared';
export * from './loading';
export * from './model-check';
export * from './queries';
export * from './transitions';
export * from './validation';
