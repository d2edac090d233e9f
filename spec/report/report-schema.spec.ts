/**
 * @file Tests of the shipped JSON Schema of report.json: a real report (the default model on the
 * embedded images) and a two-run report validate; each kind of drift is caught (a missing or mistyped
 * metric, an unknown field, a multi-run report with a run at the top, an unknown format); its required
 * definitions are exactly the ones reports carry; and the package exports it.
 */
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { METRIC_DEFINITIONS } from '../../lib/eval/evaluation.js';
import { evaluate } from '../../lib/facade.js';
import { buildReport, type SingleRunReport } from '../../lib/report/report.js';
import { REPORT_SCHEMA, reportSchemaErrors } from '../helpers/report-schema.js';

describe('schema/report.schema.json', function () {
  this.timeout(30_000);
  let report: SingleRunReport;
  const copy = (): Record<string, any> => JSON.parse(JSON.stringify(report)) as Record<string, any>;

  before(async () => {
    report = await evaluate({ model: 'models/default.onnx', data: 'folder:data/default', clusterCounts: ['1x', '10x'], device: 'cpu', workers: 0 });
  });

  it('validates a real single-run report and a two-run report', () => {
    expect(reportSchemaErrors(copy())).to.deep.equal([]);
    const run = report.runs[0]!;
    const two = JSON.parse(JSON.stringify(buildReport([run, { ...run, name: 'other.onnx' }], ['dml', 'eval']))) as unknown;
    expect(reportSchemaErrors(two)).to.deep.equal([]);
  });

  it('catches a missing or mistyped metric, an unknown field and a wrong format tag', () => {
    const missing = copy();
    delete missing.metrics.mapAtR;
    expect(reportSchemaErrors(missing)).to.include("/metrics must have required property 'mapAtR'");
    const mistyped = copy();
    mistyped.runs[0].metrics.recall['1'] = 75.3;
    expect(reportSchemaErrors(mistyped)).to.include('/runs/0/metrics/recall/1 must be <= 1');
    const unknownTop = copy();
    unknownTop.recallAt1 = 0.5;
    expect(reportSchemaErrors(unknownTop)).to.include('/ must NOT have unevaluated properties (recallAt1)');
    const unknownInRun = copy();
    unknownInRun.runs[0].score = 1;
    expect(reportSchemaErrors(unknownInRun)).to.include('/runs/0 must NOT have unevaluated properties (score)');
    // Format 4: every example names its selection (random or worst) and its AP@R.
    expect(report.examples.map((e) => e.selection)).to.deep.equal([...Array(4).fill('random'), ...Array(4).fill('worst')]);
    const noSelection = copy();
    delete noSelection.runs[0].examples[0].selection;
    expect(reportSchemaErrors(noSelection)).to.include("/runs/0/examples/0 must have required property 'selection'");
    const badAp = copy();
    badAp.runs[0].examples[0].averagePrecision = 1.5;
    expect(reportSchemaErrors(badAp)).to.include('/runs/0/examples/0/averagePrecision must be <= 1');
    const oldFormat = copy();
    oldFormat.format = 'dmlkit.report/4';
    expect(reportSchemaErrors(oldFormat)).to.include('/format must be equal to constant');
  });

  it('refuses a multi-run report that carries a run at the top (format 2 did)', () => {
    const run = report.runs[0]!;
    const two = JSON.parse(JSON.stringify({ ...buildReport([run, { ...run, name: 'other.onnx' }], ['dml']), ...run })) as unknown;
    expect(reportSchemaErrors(two)).to.include('/metrics boolean schema is false');
  });

  it('requires exactly the definitions every report carries, and is exported as dmlkit/report.schema.json', () => {
    const definitions = (REPORT_SCHEMA.properties as Record<string, { required: string[] }>).definitions!.required;
    expect([...definitions].sort()).to.deep.equal(Object.keys(METRIC_DEFINITIONS).sort());
    const require = createRequire(import.meta.url);
    expect(require.resolve('dmlkit/report.schema.json')).to.match(/schema\/report\.schema\.json$/);
  });
});
