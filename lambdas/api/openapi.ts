import * as z from 'zod';
import { REFUSAL_REASONS } from '../domain/errors';
import { DRY_RUN_VALUE, takesOwner } from './http';
import type { Router } from './router';

/**
 * The OpenAPI 3.1 document, generated from the router's table and the zod schemas the handlers validate with,
 * so the spec cannot drift from what the API accepts.
 */

const Problem = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    reason: { type: 'string', enum: [...REFUSAL_REASONS] },
    errors: {
      type: 'array',
      items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

function schemaOf(s: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

export function openApiDocument(router: Router, version = '0.1.0'): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of router.list()) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const query = Object.entries(r.doc.query?.shape ?? {}).map(([name, s]) => ({
      name,
      in: 'query',
      required: !(s as z.ZodType).safeParse(undefined).success,
      schema: schemaOf(s as z.ZodType),
    }));
    // A compute or model route's name may need its owner, when the caller sees two of it (http.ts ownerParam).
    if (takesOwner(r.path)) {
      query.push({
        name: 'owner',
        in: 'query',
        required: false,
        schema: {
          type: 'string',
          description: 'a scope such as team:ml, or shared: whose resource of that name, when you see two',
        },
      });
    }
    // Every write takes ?dryRun=All (app.ts): decided and validated as the write, nothing written.
    if (r.write) {
      query.push({
        name: 'dryRun',
        in: 'query',
        required: false,
        schema: { type: 'string', enum: [DRY_RUN_VALUE], description: 'validate and decide, write nothing' },
      });
    }
    const headers = r.write
      ? [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            schema: { type: 'string', maxLength: 128 },
          },
          ...(r.method === 'PUT' || r.method === 'DELETE'
            ? [{ name: 'If-Match', in: 'header', required: false, schema: { type: 'string' } }]
            : []),
        ]
      : [];
    const responses: Record<string, unknown> = {};
    for (const [code, description] of Object.entries(r.doc.responses ?? { 200: 'OK' })) {
      responses[code] = { description, content: { 'application/json': { schema: { type: 'object' } } } };
    }
    // 503 on every route: a container loads the built-ins before its first request, and AWS (EC2, the Price List)
    // may not answer it; writes are also checked against AWS (a compute's instance type, price and subnets).
    for (const code of r.write
      ? [400, 403, 404, 409, 413, 503]
      : r.doc.query
        ? [400, 403, 404, 503]
        : [403, 404, 503]) {
      responses[String(code)] = {
        description: 'problem details (RFC 9457)',
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      };
    }
    paths[r.path] ??= {};
    paths[r.path]![r.method.toLowerCase()] = {
      operationId: `${r.method.toLowerCase()}${r.path.replace(/\{(\w+)\}/g, 'By-$1').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string) => (c ? c.toUpperCase() : ''))}`,
      summary: r.doc.summary ?? `${r.method} ${r.path}`,
      tags: [r.doc.tag ?? r.path.split('/')[2] ?? 'llmcap'],
      parameters: [...params, ...query, ...headers],
      ...(r.doc.body
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: schemaOf(r.doc.body) } },
            },
          }
        : {}),
      responses,
      security: [{ sigv4: [] }],
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'llmcap',
      version,
      description:
        'Control plane for GPU capacity of self-hosted LLMs on EKS: computes, models, scopes, quotas, capacity.',
    },
    servers: [{ url: 'http://127.0.0.1:3000', description: 'local control plane' }],
    paths,
    components: {
      schemas: { Problem },
      securitySchemes: {
        sigv4: {
          type: 'apiKey',
          name: 'Authorization',
          in: 'header',
          description: 'AWS Signature Version 4 (IAM authorization on API Gateway)',
        },
      },
    },
  };
}
