/**
 * A write refused by its ConditionExpression: the one way every store module tells "lost the race / not there"
 * from a real failure. By name, not `instanceof`: a test that loads the API's modules twice (one per simulated
 * Lambda container) has two copies of the SDK's exception classes.
 */
export function isConditionFailure(e: unknown): boolean {
  return (e as Error | undefined)?.name === 'ConditionalCheckFailedException';
}
