import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Rules every node group workflow must keep, checked on the files CDK deploys and the local runner runs. */

const DIR = join(__dirname, '..', '..', '..', 'statemachines');
const FILES = readdirSync(DIR).filter((f) => f.endsWith('.asl.json'));

// asl-validator ships no type declarations; this is the part of its API used here.
const aslValidator = require('asl-validator') as (definition: unknown) => {
  isValid: boolean;
  errorsText: (separator?: string) => string;
};

/**
 * DynamoDB's error codes as the optimized integration names them (`DynamoDB.` + the code DynamoDB sends; AWS's
 * own sample projects retry DynamoDB.AmazonDynamoDBException, the name of a failure without a code). Codes
 * from the DynamoDB API reference: RequestLimitExceeded and InternalServerError have no Exception suffix.
 */
const DYNAMODB_TRANSIENT = [
  'DynamoDB.ProvisionedThroughputExceededException',
  'DynamoDB.ThrottlingException',
  'DynamoDB.RequestLimitExceeded',
  'DynamoDB.InternalServerError',
  'DynamoDB.AmazonDynamoDBException',
];
const DYNAMODB_ERRORS = [...DYNAMODB_TRANSIENT, 'DynamoDB.ConditionalCheckFailedException'];

/** A CDK definitionSubstitutions placeholder, spelt without a template literal look-alike. */
const ph = (name: string) => `$${'{'}${name}}`;

type State = Record<string, unknown> & { Type: string };
type Catcher = { ErrorEquals: string[]; Next: string };
const load = (f: string) =>
  JSON.parse(readFileSync(join(DIR, f), 'utf8')) as { StartAt: string; States: Record<string, State> };
const tasks = (def: ReturnType<typeof load>) =>
  Object.entries(def.States).filter(([, s]) => s.Type === 'Task');

describe.each(FILES)('%s', (file) => {
  const text = readFileSync(join(DIR, file), 'utf8');
  const def = load(file);

  it('is valid Amazon States Language (asl-validator)', () => {
    const { isValid, errorsText } = aslValidator(def);
    expect(isValid ? '' : errorsText('\n')).toBe('');
  });

  it('uses JSONPath only and no placeholder other than the three CDK substitutes', () => {
    expect(def).not.toHaveProperty('QueryLanguage');
    const placeholders = new Set([...text.matchAll(/\$\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]));
    expect([...placeholders].every((p) => ['ClusterName', 'NodeRoleArn', 'TableName'].includes(p!))).toBe(
      true,
    );
  });

  it('reaches every state from StartAt, and every Next names a state', () => {
    const seen = new Set<string>();
    const visit = (name: string) => {
      if (seen.has(name)) return;
      const s = def.States[name];
      expect(s).toBeDefined();
      seen.add(name);
      const nexts = [
        s!.Next,
        s!.Default,
        ...((s!.Choices as { Next: string }[] | undefined) ?? []).map((c) => c.Next),
        ...((s!.Catch as Catcher[] | undefined) ?? []).map((c) => c.Next),
      ].filter((n): n is string => typeof n === 'string');
      nexts.forEach(visit);
    };
    visit(def.StartAt);
    expect([...seen].sort()).toEqual(Object.keys(def.States).sort());
  });

  it('catches every failure of every Task, and retries throttling and 5xx with backoff', () => {
    for (const [name, s] of tasks(def)) {
      const catchers = (s.Catch as Catcher[] | undefined) ?? [];
      expect({ name, catchesAll: catchers.some((c) => c.ErrorEquals.includes('States.ALL')) }).toEqual({
        name,
        catchesAll: true,
      });
      const retried = ((s.Retry as { ErrorEquals: string[]; BackoffRate?: number }[]) ?? []).filter(
        (r) => (r.BackoffRate ?? 0) > 1,
      );
      const errors = retried.flatMap((r) => r.ErrorEquals);
      const resource = s.Resource as string;
      const expected = resource.includes(':eks:')
        ? ['Eks.ThrottlingException', 'Eks.ServerException', 'Eks.ServiceUnavailableException']
        : DYNAMODB_TRANSIENT;
      expect({ name, missing: expected.filter((e) => !errors.includes(e)) }).toEqual({ name, missing: [] });
    }
  });

  it('names DynamoDB errors as the optimized integration raises them: DynamoDB. and the error code as sent', () => {
    const named = new Set<string>();
    for (const [, s] of tasks(def)) {
      for (const r of [...((s.Retry as Catcher[]) ?? []), ...((s.Catch as Catcher[]) ?? [])])
        for (const e of r.ErrorEquals) if (/^DynamoD[Bb]\./.test(e)) named.add(e);
    }
    expect([...named].filter((e) => !DYNAMODB_ERRORS.includes(e))).toEqual([]);
  });

  it('writes status only conditionally on the generation, never touching version, and treats a lost condition as superseded', () => {
    const writes = tasks(def).filter(([, s]) => s.Resource === 'arn:aws:states:::dynamodb:updateItem');
    expect(writes.length).toBeGreaterThanOrEqual(3);
    for (const [name, s] of writes) {
      const p = s.Parameters as Record<string, unknown>;
      expect({ name, condition: p.ConditionExpression }).toEqual({
        name,
        condition: '#generation = :generation',
      });
      expect(p['Key.$']).toBe('$.key');
      expect(p.TableName).toBe(ph('TableName'));
      expect(Object.values(p.ExpressionAttributeNames as object)).not.toContain('version');
      expect(p.UpdateExpression).not.toMatch(/\bversion\b/);
      const first = (s.Catch as Catcher[])[0]!;
      expect(first.ErrorEquals).toEqual(['DynamoDB.ConditionalCheckFailedException']);
      expect(def.States[first.Next]).toMatchObject({ Type: 'Pass', End: true });
    }
  });

  it('polls in three states (Wait, DescribeNodegroup, Choice), with the wait from the input and a deadline', () => {
    const waits = Object.entries(def.States).filter(([, s]) => s.Type === 'Wait');
    expect(waits.length).toBe(1);
    const [waitName, wait] = waits[0]!;
    expect(wait).toMatchObject({ SecondsPath: '$.pollSeconds' });
    // Each poll is billed per state entered: Wait → Describe → Choice → back to the Wait.
    const describe = def.States[wait.Next as string]!;
    expect(describe).toMatchObject({
      Type: 'Task',
      Resource: 'arn:aws:states:::aws-sdk:eks:describeNodegroup',
    });
    const choice = def.States[describe.Next as string]!;
    expect(choice).toMatchObject({ Type: 'Choice', Default: waitName });
    // The loop ends at the deadline the input gives, compared with the time of the describe.
    expect(describe.ResultSelector).toMatchObject({ 'At.$': '$$.State.EnteredTime' });
    expect(choice.Choices).toContainEqual({
      Variable: '$.observed.At',
      TimestampGreaterThanEqualsPath: '$.waitUntil',
      Next: 'PollTimedOut',
    });
  });

  it('never paths into the optional members of a health issue (code, message)', () => {
    // A path to a missing field is States.Runtime, which no Catch (not even States.ALL) stops.
    expect(text).not.toMatch(/\$\$\.Map\.Item\.Value\./);
    expect(text).not.toMatch(/Issues\[\d+\]\./);
    expect(def.States.ListHealthIssues).toMatchObject({
      ItemSelector: { 'issue.$': 'States.JsonMerge($.absent.issue, $$.Map.Item.Value, false)' },
    });
  });

  it('ends every failed outcome in a Fail state named for the failure', () => {
    const fails = Object.values(def.States).filter((s) => s.Type === 'Fail');
    expect(fails.length).toBeGreaterThan(0);
    for (const f of fails) expect(f.ErrorPath ?? f.Error).toBeDefined();
  });
});

describe('the three workflows', () => {
  it('exist with the names CDK and the local runner load', () => {
    expect(FILES.sort()).toEqual([
      'delete-nodegroup.asl.json',
      'provision-nodegroup.asl.json',
      'scale-nodegroup.asl.json',
    ]);
  });

  it('create with every node group parameter and the idempotency token of the input (incarnation and generation)', () => {
    const create = load('provision-nodegroup.asl.json').States.CreateNodegroup!;
    expect(create.Resource).toBe('arn:aws:states:::aws-sdk:eks:createNodegroup');
    expect(create.Parameters).toMatchObject({
      ClusterName: ph('ClusterName'),
      NodeRole: ph('NodeRoleArn'),
      'ClientRequestToken.$': '$.clientRequestToken',
      'ScalingConfig.$': '$.nodegroup.scalingConfig',
      'Labels.$': '$.nodegroup.labels',
      'Taints.$': '$.nodegroup.taints',
      'Tags.$': '$.nodegroup.tags',
      'Subnets.$': '$.nodegroup.subnets',
    });
    const catchers = create.Catch as Catcher[];
    // A group that holds the name is described at once: its tags decide whether it is adopted.
    expect(catchers.find((c) => c.ErrorEquals.includes('Eks.ResourceInUseException'))?.Next).toBe(
      'DescribeNodegroup',
    );
    const update = load('scale-nodegroup.asl.json').States.UpdateNodegroupConfig!;
    expect(update.Parameters).toMatchObject({ 'ClientRequestToken.$': '$.clientRequestToken' });
  });

  it('retry ResourceInUseException on update and delete, where it means the group is busy', () => {
    for (const [file, state] of [
      ['scale-nodegroup.asl.json', 'UpdateNodegroupConfig'],
      ['delete-nodegroup.asl.json', 'DeleteNodegroup'],
    ] as const) {
      const retry = load(file).States[state]!.Retry as { ErrorEquals: string[]; BackoffRate: number }[];
      expect(
        retry.some((r) => r.ErrorEquals.includes('Eks.ResourceInUseException') && r.BackoffRate > 1),
      ).toBe(true);
    }
  });
});
