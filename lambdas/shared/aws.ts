import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { EKSClient } from '@aws-sdk/client-eks';

/**
 * EKS and Auto Scaling clients, built once per container. Locally LLMCAP_EKS_ENDPOINT points both at the cloud
 * simulator (it serves both APIs on one port); in AWS it is unset and the SDK finds the regional endpoints.
 * Adaptive retries back off under throttling, which a reconcile of hundreds of computes will meet.
 */
let eks: EKSClient | undefined;
let asg: AutoScalingClient | undefined;

const options = () => ({
  endpoint: process.env.LLMCAP_EKS_ENDPOINT || undefined,
  maxAttempts: 6,
  retryMode: 'adaptive',
});

export function eksClient(): EKSClient {
  eks ??= new EKSClient(options());
  return eks;
}

export function autoScalingClient(): AutoScalingClient {
  asg ??= new AutoScalingClient(options());
  return asg;
}

export function resetAwsClients(): void {
  eks?.destroy();
  asg?.destroy();
  eks = undefined;
  asg = undefined;
}
