/**
 * The shipped JSON Schemas of report.json (schema/report.schema.json for `dml eval`,
 * schema/train-report.schema.json for `dml train`), compiled once with Ajv (JSON Schema 2020-12,
 * formats checked), for the specs that read reports.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from 'chai';

const require = createRequire(import.meta.url);
// Ajv and ajv-formats are CommonJS packages; require gives their constructors without default-export interop.
const Ajv2020 = require('ajv/dist/2020') as typeof import('ajv/dist/2020.js').default;
const addFormats = require('ajv-formats') as typeof import('ajv-formats').default;

/** The schema as shipped. */
export const REPORT_SCHEMA = JSON.parse(readFileSync('schema/report.schema.json', 'utf8')) as Record<string, unknown>;

const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
addFormats(ajv);
const validate = ajv.compile(REPORT_SCHEMA);

/** The training report's schema as shipped. */
export const TRAIN_REPORT_SCHEMA = JSON.parse(readFileSync('schema/train-report.schema.json', 'utf8')) as Record<string, unknown>;
const validateTrainReport = ajv.compile(TRAIN_REPORT_SCHEMA);

/** Asserts that `report` (a parsed training report.json) validates against the shipped training schema. */
export function expectValidTrainReport(report: unknown): void {
  const errors = validateTrainReport(report) ? [] : (validateTrainReport.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
  expect(errors).to.deep.equal([]);
}

/** The schema's errors for `report` (empty when it validates), as `path message` lines. */
export function reportSchemaErrors(report: unknown): string[] {
  return validate(report) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}${e.params && 'unevaluatedProperty' in e.params ? ` (${String(e.params.unevaluatedProperty)})` : ''}`);
}

/** Asserts that `report` (parsed report.json) validates against the shipped schema. */
export function expectValidReport(report: unknown): void {
  expect(reportSchemaErrors(report)).to.deep.equal([]);
}
