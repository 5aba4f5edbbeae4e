import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildRouter } from '../../../lambdas/api/app';
import { openApiDocument } from '../../../lambdas/api/openapi';
import { openApiText } from '../../../lambdas/api/write-openapi';

describe('the OpenAPI document', () => {
  const router = buildRouter();
  const doc = openApiDocument(router) as { paths: Record<string, Record<string, unknown>> };

  it('documents every route of the router', () => {
    const missing = router
      .list()
      .filter((r) => !doc.paths[r.path]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.path}`);
    expect(missing).toEqual([]);
  });

  it('describes each write body with the schema the handler validates with', () => {
    const post = doc.paths['/v1/computes']!.post as any;
    const schema = post.requestBody.content['application/json'].schema;
    expect(schema.required).toEqual(expect.arrayContaining(['apiVersion', 'kind', 'metadata', 'spec']));
    expect(schema.properties.spec.properties.nodeGroup.properties.maxNodes).toMatchObject({
      minimum: 1,
      maximum: 100,
    });
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('matches docs/openapi.json (run npm run openapi after changing a route or schema)', () => {
    const committed = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8');
    expect(committed).toBe(openApiText());
  });
});
