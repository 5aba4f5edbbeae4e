import { parseStageConfig } from '../../../infra/stage-config';
import { loadConfig } from '../../../lambdas/shared/config';

/** Platform admins are checked in the forms of docs/security.md wherever they are configured. */

const SSO_ADMIN =
  'arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_PlatformAdmin_0a1b2c3d4e5f6789';

const stage = (admins: string[]) => ({
  stage: 'prod',
  account: '123456789012',
  region: 'eu-west-1',
  clusterName: 'ml-platform',
  subnetIds: ['subnet-0abc1234'],
  admins,
});

describe('admins in the stage config', () => {
  it('takes every form', () => {
    const admins = [
      SSO_ADMIN,
      'arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_PlatformAdmin_0a1b2c3d4e5f6789/jane@example.com',
      'arn:aws:iam::123456789012:user/ops/deployer',
      'arn:aws-us-gov:iam::123456789012:root',
    ];
    expect(parseStageConfig(stage(admins), 'prod.json').admins).toEqual(admins);
  });

  it('fails synth naming each admin that is in no form, and the forms', () => {
    const run = () =>
      parseStageConfig(stage([SSO_ADMIN, 'PlatformAdmin', 'arn:aws:iam::123456789012:role/*']), 'prod.json');
    expect(run).toThrow(/stage config prod\.json is invalid:\n {2}admins\.1: 'PlatformAdmin' is not an ARN/);
    expect(run).toThrow(/ {2}admins\.2: wildcards are not supported/);
    expect(run).toThrow(/an admin is an IAM principal ARN: arn:aws:iam::<account>:role\/<name>/);
  });
});

describe('LLMCAP_ADMINS', () => {
  it('parses each admin into a principal', () => {
    const c = loadConfig({ LLMCAP_ADMINS: ` ${SSO_ADMIN} , arn:aws:iam::123456789012:root,` });
    expect(c.admins.map((a) => a.kind)).toEqual(['role', 'root']);
  });

  it('fails the start naming each mistake', () => {
    expect(() => loadConfig({ LLMCAP_ADMINS: 'local-admin,arn:aws:iam::123456789012:group/admins' })).toThrow(
      /LLMCAP_ADMINS: local-admin: 'local-admin' is not an ARN.*arn:aws:iam::123456789012:group\/admins: an IAM group is not a principal/s,
    );
  });
});
