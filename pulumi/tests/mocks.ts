/**
 * Pulumi mocks shared by the unit tests: every registered resource is recorded with its type,
 * name and resolved inputs, and gets plausible computed outputs (ids, ARNs, bucket name) so
 * that policies and the state machine definition built from them can be checked.
 *
 * @module
 */

import * as pulumi from "@pulumi/pulumi";

/** One resource registered with the mocks. */
export interface RecordedResource {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}

export const ACCOUNT = "123456789012";
export const REGION = "us-east-1";

/** The computed outputs AWS would add to a resource of `type` named `name`. */
function computed(type: string, name: string, inputs: Record<string, unknown>) {
  switch (type) {
    case "aws:s3/bucket:Bucket": {
      const bucket = `${name}-0a1b2c3`;
      return { id: bucket, state: { bucket, arn: `arn:aws:s3:::${bucket}` } };
    }
    case "aws:lambda/function:Function":
      return {
        id: name,
        state: { name, arn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}` },
      };
    case "aws:iam/role:Role":
      return { id: name, state: { name, arn: `arn:aws:iam::${ACCOUNT}:role/${name}` } };
    case "aws:cloudwatch/logGroup:LogGroup":
      return {
        id: name,
        state: { name, arn: `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${name}` },
      };
    case "aws:sfn/stateMachine:StateMachine":
      return {
        id: name,
        state: { name, arn: `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${name}` },
      };
    default:
      return { id: `${name}-id`, state: { ...inputs } };
  }
}

/**
 * Installs the mocks for project `vid-lambda`, stack `test`, not a preview (so every output
 * is known) and returns the list that registrations are appended to.
 */
export async function installMocks(): Promise<RecordedResource[]> {
  const recorded: RecordedResource[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource(args: pulumi.runtime.MockResourceArgs) {
        const inputs = args.inputs as Record<string, unknown>;
        recorded.push({ type: args.type, name: args.name, inputs });
        const { id, state } = computed(args.type, args.name, inputs);
        return { id, state: { ...inputs, ...state } };
      },
      call(args: pulumi.runtime.MockCallArgs) {
        return args.inputs;
      },
    },
    "vid-lambda",
    "test",
    false,
  );
  return recorded;
}

/** The value of a Pulumi output, once the mocks have resolved it. */
export function resolved<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}

/** An IAM policy statement as written by the program. */
export interface Statement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: string | string[];
}

/** The statements of a JSON policy document. */
export function statements(policy: unknown): Statement[] {
  const document = JSON.parse(String(policy)) as { Statement: Statement[] };
  return document.Statement;
}

/** A value as a list: IAM allows one string or a list wherever lists are accepted. */
export function list(value: string | string[]): string[] {
  return Array.isArray(value) ? value : [value];
}
