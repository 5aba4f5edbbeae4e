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

const text = (f: Field | undefined) => (f?.value instanceof Buffer ? f.value.toString('utf8') : undefined);
const int = (f: Field | undefined) => (typeof f?.value === 'bigint' ? BigInt.asIntN(64, f.value) : undefined);

/** The JSON form of a protobuf-encoded DeleteOptions body. */
export function decodeProtobufBody(body: Buffer): Record<string, unknown> {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC))
    throw new UnsupportedProtobuf('the body does not start with the Kubernetes protobuf magic k8s\\0');
  const unknown = fields(body.subarray(MAGIC.length));
  const typeMeta = unknown.find((f) => f.n === 1)?.value;
  const type = typeMeta instanceof Buffer ? fields(typeMeta) : [];
  const kind = text(type.find((f) => f.n === 2));
  const apiVersion = text(type.find((f) => f.n === 1));
  if (kind !== 'DeleteOptions')
    throw new UnsupportedProtobuf(
      `the simulated API server reads protobuf for DeleteOptions only, not ${kind}`,
    );
  const raw = unknown.find((f) => f.n === 2)?.value;
  const opts = raw instanceof Buffer ? fields(raw) : [];
  const get = (n: number) => opts.find((f) => f.n === n);
  const grace = int(get(1));
  const pre = get(2)?.value;
  const preconditions = pre instanceof Buffer ? fields(pre) : undefined;
  const orphan = int(get(3));
  return {
    kind,
    ...(apiVersion ? { apiVersion } : {}),
    ...(grace !== undefined ? { gracePeriodSeconds: Number(grace) } : {}),
    ...(preconditions
      ? {
          preconditions: {
            ...(text(preconditions.find((f) => f.n === 1))
              ? { uid: text(preconditions.find((f) => f.n === 1)) }
              : {}),
            ...(text(preconditions.find((f) => f.n === 2))
              ? { resourceVersion: text(preconditions.find((f) => f.n === 2)) }
              : {}),
          },
        }
      : {}),
    ...(orphan !== undefined ? { orphanDependents: orphan !== 0n } : {}),
    ...(text(get(4)) ? { propagationPolicy: text(get(4)) } : {}),
    ...(opts.some((f) => f.n === 5) ? { dryRun: opts.filter((f) => f.n === 5).map(text) } : {}),
  };
}
