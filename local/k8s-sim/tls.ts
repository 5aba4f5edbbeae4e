import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import type * as Forge from 'node-forge';
import { processWide } from '../process-wide';

/**
 * The cluster's certificate authority and the API server's serving certificate, made at start: a CA
 * (CN=kubernetes, as EKS names it) whose PEM DescribeCluster returns base64-encoded as
 * certificateAuthority.data, and a server certificate it signed for 127.0.0.1 and localhost, so that kubectl and
 * @kubernetes/client-node verify the connection as they would against EKS. Keys come from Node's crypto (fast);
 * node-forge writes the X.509. One pair per process (processWide), which the test files a jest worker runs one
 * after another share too: making it costs ~0.4 s of CPU. node-forge (860 KB) is loaded only to make one, so a
 * test file whose worker already has the pair does not compile it again.
 */

export interface ClusterTls {
  caPem: string;
  certPem: string;
  keyPem: string;
}

function rsaKeys(forge: typeof Forge): Forge.pki.rsa.KeyPair {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const priv = forge.pki.privateKeyFromPem(pem) as Forge.pki.rsa.PrivateKey;
  return { privateKey: priv, publicKey: forge.pki.setRsaPublicKey(priv.n, priv.e) };
}

function serial(): string {
  // Positive, as X.509 requires: the top bit cleared.
  const b = randomBytes(16);
  b[0] = (b[0] as number) & 0x7f;
  return b.toString('hex');
}

export function clusterTls(): ClusterTls {
  return processWide('k8s-sim.tls', () => checkClusterTls(makeClusterTls()));
}

/**
 * The pair as a client will judge it (OpenSSL, through Node): the CA issued and signed the server certificate. A
 * CA a client cannot use is silently left out of its trust store, and every call then fails with "unable to verify
 * the first certificate", far from the cause; this says it at the start instead.
 */
export function checkClusterTls(t: ClusterTls): ClusterTls {
  const ca = new X509Certificate(t.caPem);
  const cert = new X509Certificate(t.certPem);
  if (!ca.ca || !cert.checkIssued(ca) || !cert.verify(ca.publicKey))
    throw new Error(
      `the simulated cluster's CA does not verify its API server's certificate (CA serial ${ca.serialNumber}, server serial ${cert.serialNumber}); this is a bug in local/k8s-sim/tls.ts`,
    );
  return t;
}

export function makeClusterTls(): ClusterTls {
  const forge = require('node-forge') as typeof Forge;
  const now = new Date();
  const notBefore = new Date(now.getTime() - 5 * 60_000);
  const caKeys = rsaKeys(forge);
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = serial();
  ca.validity.notBefore = notBefore;
  ca.validity.notAfter = new Date(now.getTime() + 10 * 365 * 86_400_000);
  const caName = [{ name: 'commonName', value: 'kubernetes' }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    {
      name: 'keyUsage',
      keyCertSign: true,
      cRLSign: true,
      digitalSignature: true,
      keyEncipherment: true,
      critical: true,
    },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const keys = rsaKeys(forge);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = new Date(now.getTime() + 365 * 86_400_000);
  cert.setSubject([{ name: 'commonName', value: 'kube-apiserver' }]);
  cert.setIssuer(caName);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 7, ip: '127.0.0.1' },
        { type: 2, value: 'localhost' },
        { type: 2, value: 'kubernetes' },
        { type: 2, value: 'kubernetes.default' },
        { type: 2, value: 'kubernetes.default.svc' },
        { type: 2, value: 'kubernetes.default.svc.cluster.local' },
      ],
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKeys.privateKey, forge.md.sha256.create());
  return {
    caPem: forge.pki.certificateToPem(ca),
    certPem: forge.pki.certificateToPem(cert),
    keyPem: forge.pki.privateKeyToPem(keys.privateKey),
  };
}
