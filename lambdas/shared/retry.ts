import {
  AdaptiveRetryStrategy,
  type AdaptiveRetryStrategyOptions,
  DefaultRateLimiter,
  StandardRetryStrategy,
} from '@smithy/core/retry';

/**
 * The one retry policy of every AWS SDK client (clients.ts): the SDK's adaptive mode, six attempts. Exponential
 * backoff with jitter on throttling and transient errors, and, once throttled, a client-side rate limit, which a
 * reconcile of hundreds of computes (EKS, CloudWatch) and a burst of API writes (DynamoDB) both meet. Six
 * attempts back off for about 3 s in all, well inside the API's 29 s.
 */
export const RETRY = { maxAttempts: 6, retryMode: 'adaptive' } as const;

type Backoff = NonNullable<AdaptiveRetryStrategyOptions['backoff']>;

/** Reaches the SDK's own backoff (a protected member), so the scaled one keeps its formula and its bases. */
class SdkBackoff extends StandardRetryStrategy {
  static make(): Backoff {
    return new SdkBackoff(RETRY.maxAttempts).retryBackoffStrategy;
  }
}

/**
 * The limiter's one timer is a static of the SDK's class, shared by every limiter of the process: once a scaled
 * one is made it waits `limiterWaitScale` times as long, which is 1 again when the unscaled policy is asked for.
 */
let limiterWaitScale = 1;
let limiterTimerScaled = false;
function scaleLimiterTimer(scale: number): void {
  limiterWaitScale = scale;
  if (limiterTimerScaled) return;
  limiterTimerScaled = true;
  (DefaultRateLimiter as unknown as { setTimeoutFn: (fn: () => void, ms: number) => unknown }).setTimeoutFn =
    (fn, ms) => setTimeout(fn, ms * limiterWaitScale);
}

/**
 * The SDK's adaptive limiter (its CUBIC rate and token bucket, unchanged) on a clock that runs 1/scale times as
 * fast as the wall clock: it measures, limits and waits as it would in AWS, `scale` times as long. Its clock and
 * its one timer are private members of the SDK; test/unit/config/retry.test.ts fails if an upgrade moves them.
 */
function scaledRateLimiter(scale: number): DefaultRateLimiter {
  const start = Date.now() / 1000;
  const limiter = new DefaultRateLimiter();
  (limiter as unknown as { getCurrentTimeInSeconds: () => number }).getCurrentTimeInSeconds = () =>
    start + (Date.now() / 1000 - start) / scale;
  scaleLimiterTimer(scale);
  return limiter;
}

/**
 * The client options of the one retry policy. `timeScale` (LLMCAP_SDK_RETRY_TIME_SCALE, 1 in AWS) shrinks its
 * waits, the backoff and the rate limiter's, for a simulator that runs faster than AWS; what is retried, how
 * often and when the limiter holds a request back stay the SDK's. `baseDelay` is the client's own (DynamoDB 25
 * ms, the rest the SDK's 50).
 */
export function retryOptions(timeScale: number, baseDelay?: number) {
  if (timeScale === 1) {
    limiterWaitScale = 1;
    return RETRY;
  }
  const sdk = SdkBackoff.make();
  const backoff: Backoff = {
    setDelayBase: (d) => sdk.setDelayBase(d),
    computeNextBackoffDelay: (i) => sdk.computeNextBackoffDelay(i) * timeScale,
  };
  const retryStrategy = new AdaptiveRetryStrategy(RETRY.maxAttempts, {
    maxAttempts: RETRY.maxAttempts,
    ...(baseDelay === undefined ? {} : { baseDelay }),
    backoff,
    rateLimiter: scaledRateLimiter(timeScale),
  });
  return { maxAttempts: RETRY.maxAttempts, retryStrategy };
}
