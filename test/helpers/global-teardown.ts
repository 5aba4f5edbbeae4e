export default async function globalTeardown(): Promise<void> {
  const g = globalThis as { __ddbLocal?: { stop(): Promise<void> }; __cloudSim?: { stop(): Promise<void> } };
  await g.__cloudSim?.stop();
  await g.__ddbLocal?.stop();
}
