/**
 * @file Option parsing shared by the losses: every loss declares its options as a strict zod object
 * with documented defaults, and a bad value becomes a {@link DmlError} (`E_ARG`) that names the
 * option (`loss.<option>`), what was expected and what was received.
 */
import type { z } from 'zod';
import { invalidParameterError } from '../../errors.js';

/**
 * Parses `input` with `schema`, filling defaults. Unknown options are an error (the schemas are
 * strict), so a typo in a config file never passes silently.
 */
export function parseLossOptions<S extends z.ZodType>(schema: S, input: unknown, prefix: string): z.output<S> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    throw invalidParameterError(
      [prefix, ...path, key].join('.'),
      `no unknown option (known: ${knownKeys(schema).join(', ')})`,
      valueAt(input, [...path, key]),
    );
  }
  throw invalidParameterError([prefix, ...path].join('.'), expectation(issue, fieldSchema(schema, path)), valueAt(input, path));
}

function expectation(issue: z.core.$ZodIssue, field: z.ZodType | undefined): string {
  switch (issue.code) {
    case 'invalid_type': {
      const type = issue.expected === 'int' ? 'integer' : issue.expected;
      const orNull = field !== undefined && field.safeParse(null).success ? ' or null' : '';
      return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}${orNull}`;
    }
    case 'too_small':
      return `a number ${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}`;
    case 'too_big':
      return `a number ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}`;
    case 'invalid_value':
      return `one of ${issue.values.map((v) => String(v)).join(', ')}`;
    default:
      return issue.message;
  }
}

function valueAt(input: unknown, path: readonly string[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  return (schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
}

function knownKeys(schema: z.ZodType): string[] {
  const shape = shapeOf(schema);
  return shape === undefined ? [] : Object.keys(shape);
}

/** The schema of a top-level option (the loss options are flat), if the path names one. */
function fieldSchema(schema: z.ZodType, path: readonly string[]): z.ZodType | undefined {
  return path.length === 1 ? shapeOf(schema)?.[path[0]!] : undefined;
}
