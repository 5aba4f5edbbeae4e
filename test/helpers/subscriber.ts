import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP endpoint subscribed to an SNS topic, doing what a real HTTPS subscriber (PagerDuty, a webhook) does:
 * it confirms the subscription by visiting the SubscribeURL, then records every notification it receives.
 */

export interface Received {
  headers: IncomingHttpHeaders;
  /** The SNS envelope: Type, MessageId, TopicArn, Subject, Message, Timestamp, Signature... */
  envelope: Record<string, any>;
  /** The CloudWatch alarm notification, when Message is one. */
  alarm?: Record<string, any>;
}

export interface Subscriber {
  url: string;
  received: Received[];
  /** Alarm notifications, optionally of one alarm. */
  alarms(name?: string): Record<string, any>[];
  close(): Promise<void>;
}

export async function startSubscriber(opts: { confirm?: boolean } = {}): Promise<Subscriber> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', async () => {
      const envelope = JSON.parse(raw);
      let alarm: Record<string, any> | undefined;
      if (envelope.Type === 'Notification') {
        try {
          const m = JSON.parse(envelope.Message);
          if (m && typeof m === 'object' && 'AlarmName' in m) alarm = m;
        } catch {
          // a plain message
        }
      }
      received.push({ headers: req.headers, envelope, ...(alarm ? { alarm } : {}) });
      if (envelope.Type === 'SubscriptionConfirmation' && opts.confirm !== false) {
        await fetch(envelope.SubscribeURL);
      }
      res.writeHead(200);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/sns`;
  return {
    url,
    received,
    alarms: (name) =>
      received.flatMap((r) =>
        r.alarm && (name === undefined || r.alarm.AlarmName === name) ? [r.alarm] : [],
      ),
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
