import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

/**
 * The cluster's certificate authority and the API server's serving certificate, made at start: a CA
 * (CN=kubernetes, as EKS names it) whose PEM DescribeCluster returns base64-encoded as
 * certificateAuthority.data, and a server certificate it signed for 127.0.0.1 and localhost, so that kubectl and
 * @kubernetes/client-node verify the connection as they would against EKS. Keys come from Node's crypto (fast);
 * node-forge writes the X.509. One pair per process: every simulator started by a test run shares it.
 */

export interface ClusterTls {
  caPem: string;
  certPem: string;
  keyPem: string;
}

let cached: ClusterTls | undefined;

function rsaKeys(): forge.pki.rsa.KeyPair {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const priv = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey;
  return { privateKey: priv, publicKey: forge.pki.setRsaPublicKey(priv.n, priv.e) };
}

function serial(): string {
  // Positive, as X.509 requires: the top bit cleared.
  const b = randomBytes(16);
  b[0] = (b[0] as number) & 0x7f;
  return b.toString('hex');
}

export function clusterTls(): ClusterTls {
  if (cached) return cached;
  const now = new Date();
  const notBefore = new Date(now.getTime() - 5 * 60_000);
  const caKeys = rsaKeys();
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

  const keys = rsaKeys();
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
  cached = {
    caPem: forge.pki.certificateToPem(ca),
    certPem: forge.pki.certificateToPem(cert),
    keyPem: forge.pki.privateKeyToPem(keys.privateKey),
  };
  return cached;
}
