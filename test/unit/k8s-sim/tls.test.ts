import { X509Certificate } from 'node:crypto';
import { createServer, get } from 'node:https';
import type { AddressInfo } from 'node:net';
import { checkClusterTls, clusterTls, makeClusterTls } from '../../../local/k8s-sim/tls';

/** What kubectl and the reconciler rely on: the CA DescribeCluster hands out verifies the API server. */

const handshake = async (serverPair: { certPem: string; keyPem: string }, caPem: string) => {
  const server = createServer({ cert: serverPair.certPem, key: serverPair.keyPem }, (_q, r) => r.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise<string>((resolve) =>
      get({ host: '127.0.0.1', port, ca: caPem, agent: false }, (res) => {
        res.resume();
        resolve(`HTTP ${res.statusCode}`);
      }).on('error', (e) => resolve(e.message)),
    );
  } finally {
    server.close();
  }
};

it('makes a CA that a client trusting only it accepts the API server with, for 127.0.0.1 and kubernetes.default', async () => {
  const t = clusterTls();
  expect(await handshake(t, t.caPem)).toBe('HTTP 200');
  const cert = new X509Certificate(t.certPem);
  expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
  expect(cert.checkHost('kubernetes.default.svc')).toBe('kubernetes.default.svc');
  expect(new X509Certificate(t.caPem).subject).toBe('CN=kubernetes');
});

it('is made once per process: a second module registry (as the next test file in a jest worker has) gets the same pair', () => {
  const first = clusterTls();
  jest.isolateModules(() => {
    const again = require('../../../local/k8s-sim/tls') as typeof import('../../../local/k8s-sim/tls');
    expect(again.clusterTls()).toEqual(first);
    expect(again.makeClusterTls().caPem).not.toBe(first.caPem);
  });
});

it('refuses a pair whose CA did not sign the server certificate, which clients would fail far from the cause', async () => {
  const a = clusterTls();
  const b = makeClusterTls();
  const mixed = { caPem: a.caPem, certPem: b.certPem, keyPem: b.keyPem };
  expect(await handshake(mixed, mixed.caPem)).toBe('unable to verify the first certificate');
  expect(() => checkClusterTls(mixed)).toThrow(/CA does not verify its API server's certificate/);
  expect(checkClusterTls(b)).toBe(b);
});
