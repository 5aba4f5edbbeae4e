import { decodeProtobufBody, UnsupportedProtobuf } from '../../../local/k8s-sim/protobuf';

/** The protobuf DeleteOptions kubectl sends (local/k8s-sim/protobuf.ts), built here field by field. */

const varint = (n: number) => {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
};
const bytes = (n: number, b: Buffer) => Buffer.concat([varint((n << 3) | 2), varint(b.length), b]);
const str = (n: number, s: string) => bytes(n, Buffer.from(s));
const num = (n: number, v: number) => Buffer.concat([varint(n << 3), varint(v)]);
const envelope = (kind: string, raw: Buffer) =>
  Buffer.concat([Buffer.from('k8s\0'), bytes(1, Buffer.concat([str(1, 'v1'), str(2, kind)])), bytes(2, raw)]);

it('reads every field of DeleteOptions', () => {
  const raw = Buffer.concat([
    num(1, 30),
    bytes(2, Buffer.concat([str(1, 'uid-1'), str(2, '42')])),
    num(3, 0),
    str(4, 'Foreground'),
    str(5, 'All'),
  ]);
  expect(decodeProtobufBody(envelope('DeleteOptions', raw))).toEqual({
    kind: 'DeleteOptions',
    apiVersion: 'v1',
    gracePeriodSeconds: 30,
    preconditions: { uid: 'uid-1', resourceVersion: '42' },
    orphanDependents: false,
    propagationPolicy: 'Foreground',
    dryRun: ['All'],
  });
});

it('refuses any other message, and a body without the magic, naming what it reads', () => {
  expect(() => decodeProtobufBody(envelope('Pod', Buffer.alloc(0)))).toThrow(
    new UnsupportedProtobuf('the simulated API server reads protobuf for DeleteOptions only, not Pod'),
  );
  expect(() => decodeProtobufBody(Buffer.from('{}'))).toThrow(/Kubernetes protobuf magic/);
});
