import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildRouter } from './app';
import { openApiDocument } from './openapi';

/** `npm run openapi`: writes docs/openapi.json, which a test keeps in step with the router. */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(buildRouter()), null, 2)}\n`;
}

if (require.main === module) {
  const file = join(__dirname, '..', '..', 'docs', 'openapi.json');
  writeFileSync(file, openApiText());
  console.log(`wrote ${file}`);
}
