import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as sns from 'aws-cdk-lib/aws-sns';

/**
 * Who may publish to the KMS-encrypted on-call topic. Two kinds of publisher exist in AWS, and each needs two
 * permissions, one on the topic and one on the key (SNS encrypts every message with a data key of it):
 *
 * - an AWS service publishing as its service principal on behalf of a resource (CloudWatch alarms, EventBridge
 *   rules): resource policies on both, since a service principal has no identity policy. Use
 *   {@link allowServiceToPublish};
 * - an IAM role publishing with its own credentials (a Lambda on-failure destination publishes with the
 *   function's execution role): identity policies, which the key policy's account statement lets IAM grant.
 *   Use `topic.grantPublish(role)`, which also grants kms:Decrypt and kms:GenerateDataKey* on the key.
 */
export interface ServicePublisher {
  /** The service principal, e.g. `cloudwatch.amazonaws.com`. */
  service: string;
  /** ARN patterns of the resources publishing (`aws:SourceArn`), all of this stack's account. */
  sourceArns: string[];
  /**
   * Whether the service's KMS requests carry `aws:SourceAccount`/`aws:SourceArn`, so the key policy can be
   * conditioned on them too. True for CloudWatch alarms; AWS documents that EventBridge's do not (conditions
   * there would make KMS refuse every message, silently), so for `events.amazonaws.com` pass false.
   */
  keyPolicySourceConditions: boolean;
}

export function allowServiceToPublish(topic: sns.Topic, key: kms.Key, publisher: ServicePublisher): void {
  const account = Stack.of(topic).account;
  // Against the confused deputy: the service may publish only for this account's own resources of that kind.
  const source = {
    StringEquals: { 'aws:SourceAccount': account },
    ArnLike: { 'aws:SourceArn': publisher.sourceArns },
  };
  const principal = new iam.ServicePrincipal(publisher.service);
  topic.addToResourcePolicy(
    new iam.PolicyStatement({
      principals: [principal],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: source,
    }),
  );
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      principals: [principal],
      actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      // In a key policy "*" is the key itself.
      resources: ['*'],
      ...(publisher.keyPolicySourceConditions ? { conditions: source } : {}),
    }),
  );
}
