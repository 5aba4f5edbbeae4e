#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's require hook, so `npx llmcap` works in the repo without a build step.
require('tsx/cjs');
require('../main.ts').runCli();
