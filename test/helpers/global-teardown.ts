export default async function globalTeardown(): Promise<void> {
  const ddb = (globalThis as { __ddbLocal?: { stop(): Promise<void> } }).__ddbLocal;
  await ddb?.stop();
}
