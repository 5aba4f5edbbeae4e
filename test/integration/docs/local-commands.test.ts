import { describeDocCommands } from './doc-commands';

/** docs/local.md's commands, beside README.md's (commands.test.ts): see doc-commands.ts. */

describeDocCommands('docs/local.md');
