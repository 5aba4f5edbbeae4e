import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as clients from '../../../lambdas/shared/clients';

/** One clients module with one retry policy: every SDK client the Lambda code uses is built there. */

const ROOT = join(__dirname, '..', '..', '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

afterAll(() => clients.resetClients());

describe('AWS clients', () => {
  it('are constructed in lambdas/shared/clients.ts only', () => {
    const elsewhere = sources(join(ROOT, 'lambdas'))
      .filter((p) => !p.endsWith(join('shared', 'clients.ts')))
      .flatMap((p) =>
        [...readFileSync(p, 'utf8').matchAll(/new ([A-Z][A-Za-z0-9]*Client)\(/g)].map(
          (m) => `${relative(ROOT, p)}: ${m[1]}`,
        ),
      );
    // The one client that is not an AWS SDK client: the cluster's Kubernetes API. It is not built once: its EKS
    // token expires 15 minutes after signing, so lambdas/aws/kubernetes.ts remakes it every 10 after an async
    // DescribeCluster and a signing, and its calls go to the API server, not through the SDK's retry policy.
    expect(elsewhere).toEqual(['lambdas/aws/kubernetes.ts: ClusterClient']);
  });

  it('all retry the same way: adaptive, six attempts', async () => {
    const built = [
      clients.dynamoClient(),
      clients.documentClient(),
      clients.eksClient(),
      clients.autoScalingClient(),
      clients.sfnClient(),
      clients.cloudWatchClient(),
      clients.lambdaClient(),
      clients.ec2Client('us-east-1'),
      clients.pricingClient('us-east-1'),
    ];
    for (const c of built) {
      const cfg = c.config as {
        maxAttempts: () => Promise<number>;
        retryStrategy: () => Promise<{ mode: string }>;
      };
      expect(await cfg.maxAttempts()).toBe(clients.RETRY.maxAttempts);
      expect((await cfg.retryStrategy()).mode).toBe('adaptive');
    }
    built[0]!.destroy();
  });

  it('are built once per container, and anew after a reset', () => {
    const eks = clients.eksClient();
    expect(clients.eksClient()).toBe(eks);
    clients.resetClients();
    expect(clients.eksClient()).not.toBe(eks);
  });
});
