/**
 * The one protobuf body kubectl sends the simulated API server: DeleteOptions, which `kubectl drain
 * --disable-eviction` (and `kubectl delete` through client-go's protobuf client) encodes as Kubernetes' protobuf
 * envelope (the magic `k8s\0`, then a runtime.Unknown holding the type and the message). Decoded to the JSON
 * object the server reads; any other protobuf body is refused with 415, naming what to send instead.
 * Field numbers: k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto and pkg/runtime/generated.proto.
 */

export const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** A protobuf body the simulator cannot read. */
export class UnsupportedProtobuf extends Error {}

type Field = { n: number; wire: number; value: bigint | Buffer };

/** The fields of one message, in order (varints as bigint, length-delimited as bytes; fixed widths skipped). */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (i >= buf.length) throw new UnsupportedProtobuf('a protobuf varint runs past the end of the body');
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const n = key >> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ n, wire, value: varint() });
    else if (wire === 2) {
      const len = Number(varint());
      out.push({ n, wire, value: buf.subarray(i, i + len) });
      i += len;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new UnsupportedProtobuf(`protobuf wire type ${wire} is not read here`);
  }
  return out;
}

const field = (fs: readonly Field[], n: number) => fs.find((f) => f.n === n);
/** An embedded message's fields (none when absent). */
const message = (f: Field | undefined) => (f?.value instanceof Buffer ? fields(f.value) : []);
const text = (f: Field | undefined) => (f?.value instanceof Buffer ? f.value.toString('utf8') : undefined);
const int = (f: Field | undefined) => (typeof f?.value === 'bigint' ? BigInt.asIntN(64, f.value) : undefined);

/** The JSON form of a protobuf-encoded DeleteOptions body. */
export function decodeProtobufBody(body: Buffer): Record<string, unknown> {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC))
    throw new UnsupportedProtobuf('the body does not start with the Kubernetes protobuf magic k8s\\0');
  const unknown = fields(body.subarray(MAGIC.length));
  const type = message(field(unknown, 1));
  const kind = text(field(type, 2));
  const apiVersion = text(field(type, 1));
  if (kind !== 'DeleteOptions')
    throw new UnsupportedProtobuf(
      `the simulated API server reads protobuf for DeleteOptions only, not ${kind}`,
    );
  const opts = message(field(unknown, 2));
  const grace = int(field(opts, 1));
  const pre = field(opts, 2) ? message(field(opts, 2)) : undefined;
  const uid = pre && text(field(pre, 1));
  const resourceVersion = pre && text(field(pre, 2));
  const orphan = int(field(opts, 3));
  const policy = text(field(opts, 4));
  const dryRun = opts.filter((f) => f.n === 5).map(text);
  return {
    kind,
    ...(apiVersion ? { apiVersion } : {}),
    ...(grace !== undefined ? { gracePeriodSeconds: Number(grace) } : {}),
    ...(pre
      ? { preconditions: { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) } }
      : {}),
    ...(orphan !== undefined ? { orphanDependents: orphan !== 0n } : {}),
    ...(policy ? { propagationPolicy: policy } : {}),
    ...(dryRun.length ? { dryRun } : {}),
  };
}
