import { startStack } from './stack';

export default async function globalSetup(): Promise<void> {
  const s = await startStack();
  console.log(`e2e: router at ${s.origin}, fixture at ${s.fixtureUrl}`);
}
