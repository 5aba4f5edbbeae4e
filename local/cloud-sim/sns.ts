import { randomUUID } from 'node:crypto';
import { xmlEscape } from './autoscaling';
import type { Clock } from './clock';

/**
 * SNS as the on-call path uses it, over the query protocol (form-encoded POST, XML answers) the installed
 * @aws-sdk/client-sns speaks: topics, subscriptions of HTTP/HTTPS endpoints (confirmed the way SNS confirms
 * them: a SubscriptionConfirmation POST whose SubscribeURL the endpoint must visit) and email (recorded, never
 * mailed), Publish, and the HTTP notification envelope a real HTTPS subscriber receives.
 */

const NS = 'http://sns.amazonaws.com/doc/2010-03-31/';
export const SNS_VERSION = '2010-03-31';
export const SNS_ACTIONS = new Set([
  'CreateTopic',
  'DeleteTopic',
  'ListTopics',
  'Subscribe',
  'ConfirmSubscription',
  'Unsubscribe',
  'ListSubscriptionsByTopic',
  'Publish',
]);

export class SnsError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const invalidParameter = (what: string) =>
  new SnsError(400, 'InvalidParameter', `Invalid parameter: ${what}`);

export interface SimSubscription {
  arn: string;
  topicArn: string;
  protocol: 'http' | 'https' | 'email' | 'email-json';
  endpoint: string;
  pending: boolean;
  token: string;
  raw: boolean;
}

export interface SimTopic {
  arn: string;
  name: string;
  displayName: string;
  subscriptions: Map<string, SimSubscription>;
}

export interface Delivery {
  at: string;
  topicArn: string;
  subscriptionArn: string;
  endpoint: string;
  type: 'Notification' | 'SubscriptionConfirmation';
  messageId: string;
  subject?: string;
  /** The HTTP status the endpoint answered, or the error that stopped delivery; undefined while in flight. */
  status?: number;
  error?: string;
  attempts: number;
  body: string;
}

export interface SnsOptions {
  clock: Clock;
  region: string;
  accountId: string;
  /** Where SubscribeURL and UnsubscribeURL point (the simulator's endpoint); set once the server listens. */
  endpoint(): string;
  log?: (line: string) => void;
}

/** SNS retries an HTTP delivery that fails; the simulator retries at once, this many times in all. */
const ATTEMPTS = 3;

export class SnsService {
  readonly topics = new Map<string, SimTopic>();
  /** The last 200 deliveries, oldest first. */
  readonly deliveries: Delivery[] = [];
  private readonly inflight = new Set<Promise<void>>();

  constructor(readonly opts: SnsOptions) {}

  /** Resolves when every delivery started so far (and any it started) has finished. */
  async drain(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  private arn(name: string): string {
    return `arn:aws:sns:${this.opts.region}:${this.opts.accountId}:${name}`;
  }

  private topic(arn: string | null): SimTopic {
    if (!arn) throw invalidParameter('TopicArn');
    const t = this.topics.get(arn);
    if (!t) throw new SnsError(404, 'NotFound', 'Topic does not exist');
    return t;
  }

  createTopic(name: string, displayName = ''): string {
    if (!/^[A-Za-z0-9_-]{1,256}$/.test(name))
      throw invalidParameter('Topic Name: must be 1-256 letters, digits, hyphens and underscores');
    const arn = this.arn(name);
    if (!this.topics.has(arn)) this.topics.set(arn, { arn, name, displayName, subscriptions: new Map() });
    return arn;
  }

  subscribe(topicArn: string, protocol: string, endpoint: string, raw = false): SimSubscription {
    const t = this.topic(topicArn);
    if (!['http', 'https', 'email', 'email-json'].includes(protocol))
      throw invalidParameter(`Amazon SNS does not support this protocol string: ${protocol}`);
    if ((protocol === 'http' || protocol === 'https') && !endpoint.startsWith(`${protocol}://`))
      throw invalidParameter('Endpoint must match the specified protocol');
    if (protocol.startsWith('email') && !/^[^@\s]+@[^@\s]+$/.test(endpoint))
      throw invalidParameter('Invalid SMTP email address');
    const same = [...t.subscriptions.values()].find(
      (s) => s.protocol === protocol && s.endpoint === endpoint,
    );
    if (same) return same;
    const sub: SimSubscription = {
      arn: `${topicArn}:${randomUUID()}`,
      topicArn,
      protocol: protocol as SimSubscription['protocol'],
      endpoint,
      pending: true,
      token: randomUUID().replace(/-/g, '') + randomUUID().replace(/-/g, ''),
      raw,
    };
    t.subscriptions.set(sub.arn, sub);
    if (protocol === 'http' || protocol === 'https') {
      const body = {
        Type: 'SubscriptionConfirmation',
        MessageId: randomUUID(),
        Token: sub.token,
        TopicArn: topicArn,
        Message: `You have chosen to subscribe to the topic ${topicArn}.\nTo confirm the subscription, visit the SubscribeURL included in this message.`,
        SubscribeURL: `${this.opts.endpoint()}/?Action=ConfirmSubscription&TopicArn=${encodeURIComponent(topicArn)}&Token=${sub.token}`,
        Timestamp: new Date(this.opts.clock.now()).toISOString(),
        ...this.signature(),
      };
      this.deliver(sub, 'SubscriptionConfirmation', body.MessageId, undefined, JSON.stringify(body));
    } else {
      this.opts.log?.(`SNS ${topicArn}: confirmation for ${endpoint} recorded (no mail is sent locally)`);
    }
    return sub;
  }

  confirm(topicArn: string | null, token: string | null): string {
    const t = this.topic(topicArn);
    const sub = [...t.subscriptions.values()].find((s) => s.token === token);
    if (!sub) throw invalidParameter('Invalid token');
    sub.pending = false;
    return sub.arn;
  }

  unsubscribe(arn: string | null): void {
    for (const t of this.topics.values()) if (arn && t.subscriptions.delete(arn)) return;
    throw new SnsError(404, 'NotFound', 'Subscription does not exist');
  }

  /** Publishes to every confirmed subscription; answers the message id at once, deliveries run behind. */
  publish(topicArn: string, message: string, subject?: string): string {
    const t = this.topic(topicArn);
    if (message.length === 0) throw invalidParameter('Empty message');
    if (Buffer.byteLength(message) > 256 * 1024) throw invalidParameter('Message too long');
    if (subject !== undefined && (subject.length > 100 || /[\r\n]/.test(subject)))
      throw invalidParameter('Subject');
    const messageId = randomUUID();
    for (const sub of t.subscriptions.values()) {
      if (sub.pending) continue;
      const envelope = {
        Type: 'Notification',
        MessageId: messageId,
        TopicArn: topicArn,
        ...(subject !== undefined ? { Subject: subject } : {}),
        Message: message,
        Timestamp: new Date(this.opts.clock.now()).toISOString(),
        ...this.signature(),
        UnsubscribeURL: `${this.opts.endpoint()}/?Action=Unsubscribe&SubscriptionArn=${encodeURIComponent(sub.arn)}`,
      };
      this.deliver(sub, 'Notification', messageId, subject, sub.raw ? message : JSON.stringify(envelope));
    }
    return messageId;
  }

  /** SNS signs every message; the simulator cannot, so its fields are present and say so. */
  private signature() {
    return {
      SignatureVersion: '1',
      Signature: 'LOCAL-CLOUD-SIM-UNSIGNED',
      SigningCertURL: `${this.opts.endpoint()}/SimpleNotificationService-cloud-sim.pem`,
    };
  }

  private deliver(
    sub: SimSubscription,
    type: Delivery['type'],
    messageId: string,
    subject: string | undefined,
    body: string,
  ): void {
    const d: Delivery = {
      at: new Date(this.opts.clock.now()).toISOString(),
      topicArn: sub.topicArn,
      subscriptionArn: sub.pending ? 'PendingConfirmation' : sub.arn,
      endpoint: sub.endpoint,
      type,
      messageId,
      ...(subject !== undefined ? { subject } : {}),
      attempts: 0,
      body,
    };
    this.deliveries.push(d);
    if (this.deliveries.length > 200) this.deliveries.shift();
    if (sub.protocol.startsWith('email')) {
      d.status = 250;
      d.attempts = 1;
      return;
    }
    const headers = {
      'content-type': 'text/plain; charset=UTF-8',
      'user-agent': 'Amazon Simple Notification Service Agent',
      'x-amz-sns-message-type': type,
      'x-amz-sns-message-id': messageId,
      'x-amz-sns-topic-arn': sub.topicArn,
      ...(type === 'Notification' ? { 'x-amz-sns-subscription-arn': sub.arn } : {}),
      ...(sub.raw ? { 'x-amz-sns-rawdelivery': 'true' } : {}),
    };
    const run = (async () => {
      while (d.attempts < ATTEMPTS) {
        d.attempts++;
        try {
          const r = await fetch(sub.endpoint, {
            method: 'POST',
            headers,
            body,
            signal: AbortSignal.timeout(15_000),
          });
          await r.arrayBuffer().catch(() => undefined);
          d.status = r.status;
          delete d.error;
          if (r.status >= 200 && r.status < 300) return;
        } catch (e) {
          d.error = (e as Error).message;
        }
      }
      this.opts.log?.(
        `SNS ${type} to ${sub.endpoint} failed after ${d.attempts} attempts: ${d.error ?? `HTTP ${d.status}`}`,
      );
    })();
    this.inflight.add(run);
    run.finally(() => this.inflight.delete(run));
  }

  // --- the query API -----------------------------------------------------------------------------------------

  handle(form: URLSearchParams): string {
    const action = form.get('Action') ?? '';
    const requestId = randomUUID();
    const wrap = (inner: string) =>
      `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${NS}">${inner}<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>`;
    const result = (inner: string) => wrap(`<${action}Result>${inner}</${action}Result>`);
    const el = (n: string, v: string) => `<${n}>${xmlEscape(v)}</${n}>`;
    switch (action) {
      case 'CreateTopic': {
        const attrs = entries(form, 'Attributes');
        return result(el('TopicArn', this.createTopic(form.get('Name') ?? '', attrs.DisplayName ?? '')));
      }
      case 'DeleteTopic':
        this.topic(form.get('TopicArn'));
        this.topics.delete(form.get('TopicArn') as string);
        return wrap('');
      case 'ListTopics':
        return result(
          `<Topics>${[...this.topics.keys()]
            .sort()
            .map((a) => `<member>${el('TopicArn', a)}</member>`)
            .join('')}</Topics>`,
        );
      case 'Subscribe': {
        const attrs = entries(form, 'Attributes');
        const sub = this.subscribe(
          form.get('TopicArn') ?? '',
          form.get('Protocol') ?? '',
          form.get('Endpoint') ?? '',
          attrs.RawMessageDelivery === 'true',
        );
        const arn =
          !sub.pending || form.get('ReturnSubscriptionArn') === 'true' ? sub.arn : 'pending confirmation';
        return result(el('SubscriptionArn', arn));
      }
      case 'ConfirmSubscription':
        return result(el('SubscriptionArn', this.confirm(form.get('TopicArn'), form.get('Token'))));
      case 'Unsubscribe':
        this.unsubscribe(form.get('SubscriptionArn'));
        return wrap('');
      case 'ListSubscriptionsByTopic': {
        const t = this.topic(form.get('TopicArn'));
        const subs = [...t.subscriptions.values()].map(
          (x) =>
            `<member>${el('TopicArn', x.topicArn)}${el('Protocol', x.protocol)}${el('SubscriptionArn', x.pending ? 'PendingConfirmation' : x.arn)}${el('Owner', this.opts.accountId)}${el('Endpoint', x.endpoint)}</member>`,
        );
        return result(`<Subscriptions>${subs.join('')}</Subscriptions>`);
      }
      case 'Publish': {
        const subject = form.get('Subject') ?? undefined;
        const id = this.publish(form.get('TopicArn') ?? '', form.get('Message') ?? '', subject);
        return result(el('MessageId', id));
      }
      default:
        throw new SnsError(400, 'InvalidAction', `The cloud simulator does not serve SNS ${action}.`);
    }
  }

  errorXml(e: SnsError): string {
    return `<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse xmlns="${NS}"><Error><Type>Sender</Type><Code>${xmlEscape(e.code)}</Code><Message>${xmlEscape(e.message)}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`;
  }
}

/** `Prefix.entry.N.key` / `.value` maps of the query protocol. */
function entries(form: URLSearchParams, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (let n = 1; form.has(`${prefix}.entry.${n}.key`); n++) {
    out[form.get(`${prefix}.entry.${n}.key`) as string] = form.get(`${prefix}.entry.${n}.value`) ?? '';
  }
  return out;
}
