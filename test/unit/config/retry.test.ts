import type { AdaptiveRetryStrategy } from '@smithy/core/retry';
import { RETRY, retryOptions } from '../../../lambdas/shared/retry';

type Strategy = AdaptiveRetryStrategy;
type RetryErrorInfo = Parameters<Strategy['refreshRetryTokenForRetry']>[1];
type Token = Parameters<Strategy['refreshRetryTokenForRetry']>[0];

/**
 * The retry policy with its waits scaled (LLMCAP_SDK_RETRY_TIME_SCALE, local only): the SDK's own adaptive
 * strategy, retrying what and as often as it does, waiting `scale` times as long. In AWS the scale is 1 and
 * the clients get the SDK's policy itself.
 */

const throttled: RetryErrorInfo = {
  errorType: 'THROTTLING',
  error: Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }),
} as RetryErrorInfo;

function scaled(scale: number): Strategy {
  const o = retryOptions(scale) as { maxAttempts: number; retryStrategy: Strategy };
  expect(o.maxAttempts).toBe(6);
  return o.retryStrategy;
}

afterAll(() => retryOptions(1));

describe('the retry policy', () => {
  it('is the SDK default, adaptive with six attempts, at scale 1', () => {
    expect(retryOptions(1)).toBe(RETRY);
    expect(retryOptions(1, 25)).toEqual({ maxAttempts: 6, retryMode: 'adaptive' });
  });

  it('scaled, retries a throttled call five times, as the SDK does, with backoff a thousandth as long', async () => {
    const s = scaled(0.001);
    expect(s.mode).toBe('adaptive');
    let token = (await s.acquireInitialRetryToken('')) as Token;
    const t0 = Date.now();
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      token = (await s.refreshRetryTokenForRetry(token, throttled)) as Token;
      delays.push(
        (token as unknown as { $retryLog: { acquisitionDelay: number } }).$retryLog.acquisitionDelay,
      );
    }
    await expect(s.refreshRetryTokenForRetry(token, throttled)).rejects.toThrow('No retry token available');
    // The SDK backs a throttle off by up to 1 s × 2^attempt (jitter); scaled, by at most a thousandth of it.
    delays.forEach((d, i) => {
      expect(d).toBeGreaterThan(0);
      expect(d).toBeLessThanOrEqual(2 ** i);
    });
    // The limiter's waits (at least half a second a token once throttled, unscaled) shrink the same way.
    expect(Date.now() - t0).toBeLessThan(1_000);
  });

  it('scaled, still holds requests back once throttled, for the scaled time', async () => {
    const s = scaled(0.01);
    const token = (await s.acquireInitialRetryToken('')) as Token;
    await s.refreshRetryTokenForRetry(token, throttled);
    // Throttled after one request, the SDK's limiter lets 0.5 to 1.1 requests a second through (0.7 of the rate
    // it measured, at least 0.5): ten take 8 s or more unscaled, 80 ms or more at 0.01; without it, no time.
    const t0 = Date.now();
    for (let i = 0; i < 10; i++) await s.acquireInitialRetryToken('');
    const took = Date.now() - t0;
    expect(took).toBeGreaterThan(50);
    expect(took).toBeLessThan(5_000);
  });
});
