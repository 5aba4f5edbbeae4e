import type { ControlPlane } from '../../../local/control-plane';
import { testControlPlane } from '../../helpers/control-plane';

/**
 * The local API answers every caller as local-admin unless told otherwise, so a web page the developer visits
 * must not be able to write to it: browsers name the page that sent a request (Origin, Sec-Fetch-Site), and a
 * write from another origin is refused. The CLI, curl and SDKs send neither and work as before.
 */

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('cross-site');
});
afterAll(() => cp.stop());

const post = (name: string, headers: Record<string, string>, type = 'application/json') =>
  fetch(`${cp.apiUrl}/v1/scopes`, {
    method: 'POST',
    headers: { 'content-type': type, ...headers },
    body: JSON.stringify({ name }),
  });
const exists = async (name: string) =>
  (await fetch(`${cp.apiUrl}/v1/scopes/${encodeURIComponent(name)}`)).status === 200;

describe('the local API and browsers', () => {
  it.each([
    ['a page on another site', { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }],
    ['a browser that names only the fetch site', { 'sec-fetch-site': 'cross-site' }],
    [
      'another port of localhost (same site, not same origin)',
      { origin: 'http://localhost:1', 'sec-fetch-site': 'same-site' },
    ],
    ['a sandboxed page or a file:// page', { origin: 'null' }],
    ['a DNS-rebinding page, whose origin is its own name', { origin: 'http://rebind.example:3000' }],
  ])('refuses a write from %s with 403 problem+json, and writes nothing', async (_, headers) => {
    const name = `org:x${Math.random().toString(36).slice(2, 8)}`;
    const r = await post(name, headers);
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(((await r.json()) as any).detail).toMatch(/cross-site.*CLI/);
    expect(await exists(name)).toBe(false);
  });

  it('refuses the form POST a page can send without CORS, and a cross-site DELETE', async () => {
    const form = await post('org:form', { origin: 'https://evil.example' }, 'text/plain');
    expect(form.status).toBe(403);
    expect((await post('org:victim', {})).status).toBe(201);
    const del = await fetch(`${cp.apiUrl}/v1/scopes/org%3Avictim`, {
      method: 'DELETE',
      headers: { origin: 'https://evil.example' },
    });
    expect(del.status).toBe(403);
    expect(await exists('org:victim')).toBe(true);
  });

  it('accepts writes from the CLI and other clients that name no origin, and from its own origin', async () => {
    expect((await post('org:cli', {})).status).toBe(201);
    const own = new URL(cp.apiUrl).origin;
    expect((await post('org:own', { origin: own, 'sec-fetch-site': 'same-origin' })).status).toBe(201);
    // A request the user made themselves (typed in the address bar, a bookmark) is `none`.
    expect((await post('org:typed', { 'sec-fetch-site': 'none' })).status).toBe(201);
  });

  it('still answers reads from anywhere: without CORS headers the page cannot read them', async () => {
    const r = await fetch(`${cp.apiUrl}/v1/healthz`, { headers: { origin: 'https://evil.example' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });
});
