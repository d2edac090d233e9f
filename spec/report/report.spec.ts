/**
 * @file Tests of report/: report.json's shape (format tag, definitions, the first run repeated at the
 * top), the Markdown table's values and columns for runs side by side, and the HTML page's escaping and
 * charts.
 */
import { expect } from 'chai';
import { METRIC_DEFINITIONS, type EvaluationMetrics, type EvaluationParameters } from '../../lib/eval/evaluation.js';
import { autoRange, nmiChartSvg, recallChartSvg } from '../../lib/report/html.js';
import { examplesMarkdown, perClassComparisonTable, perClassMarkdown, reportMarkdown } from '../../lib/report/markdown.js';
import { reportHtml, reportMarkdownFile } from '../../lib/report/sections.js';
import type { RunReport } from '../../lib/eval/run-report.js';
import { buildReport, isSingleRunReport, REPORT_FORMAT } from '../../lib/report/report.js';
import { fittedRange, tickStep } from '../../lib/report/svg-line-chart.js';
import { scatterRanges } from '../../lib/report/svg-scatter.js';

function run(name: string, recall1: number, curve: Array<[number, number]>, extra: Partial<EvaluationMetrics> = {}): RunReport {
  const metrics: EvaluationMetrics = {
    recall: { '1': recall1, '4': 1 },
    precisionAt1: recall1,
    rPrecision: 0.5,
    mapAtR: 0.25,
    mrr: 0.75,
    map: 0.3,
    mapAtK: { '1': recall1, '4': 0.6 },
    nmi: curve[0]?.[1] ?? 0,
    ami: 0.2,
    nmiCurve: curve.map(([clusters, nmi]) => ({ clusters, nmi, f1: 0.5, inertia: 1, iterations: 3, converged: true })),
    nmiPlus: null,
    f1: 0.5,
    loneQueries: 1,
    queryCount: 10,
    galleryCount: 10,
    labelCount: 2,
    accuracyCalculator: {
      precision_at_1: recall1,
      r_precision: 0.5,
      mean_average_precision_at_r: 0.25,
      mean_average_precision: 0.3,
      mean_reciprocal_rank: 0.75,
      NMI: curve[0]?.[1] ?? 0,
      AMI: 0.2,
    },
    perClass: [
      { label: 'shirt & <tie>', queryCount: 4, recallAt1: 0.25, rPrecision: 0.2, mapAtR: 0.1 },
      { label: 'bag', queryCount: 6, recallAt1: 0.5, rPrecision: 0.4, mapAtR: 0.3 },
    ],
    ...extra,
  };
  const parameters: EvaluationParameters = {
    ks: [1, 4],
    clusterCounts: ['1x', '10x'],
    resolvedClusterCounts: curve.map(([c]) => c),
    clusterSet: 'union',
    index: { kind: 'exact', chunkSize: 512 },
    kmeans: { init: 'k-means++', roundFraction: 0.25, maxIterations: 100, tolerance: 1e-4, restarts: 1, seed: 0 },
    selfExclusion: 'by-id',
    neighboursRetrieved: 5,
    fullRanking: true,
  };
  return {
    name,
    dataset: { spec: 'folder:<x & y>', layout: 'folder', protocol: 'ImageFolder', queryCount: 10, galleryCount: 10, sameSet: true, skippedImages: [] },
    metrics,
    parameters,
    timings: { searchSeconds: 0.1, clusteringSeconds: 0.2 },
    examples: [
      {
        selection: 'random',
        kind: 'failure',
        query: { id: 'bag/1.png', label: 'bag' },
        averagePrecision: 0.5,
        neighbours: [
          { id: 'shirt|2.png', label: 'shirt & <tie>', similarity: 0.9, correct: false },
          { id: 'bag/3.png', label: 'bag', similarity: 0.8, correct: true },
        ],
      },
      { selection: 'worst', kind: 'success', query: { id: 'bag/3.png', label: 'bag' }, averagePrecision: 0.25, neighbours: [{ id: 'bag/1.png', label: 'bag', similarity: 0.8, correct: true }] },
    ],
    warnings: [],
  };
}

describe('report', () => {
  const a = run('a.onnx', 0.5, [[2, 0.3], [20, 0.4]], { nmiPlus: 0.4 });
  const b: RunReport = {
    ...run('b.onnx', 0.75, [[2, 0.35]], {
      perClass: [
        { label: 'bag', queryCount: 6, recallAt1: 0.5, rPrecision: 0.4, mapAtR: 0.2 },
        { label: 'shirt & <tie>', queryCount: 4, recallAt1: 0.75, rPrecision: 0.5, mapAtR: 0.5 },
        { label: 'hat', queryCount: 2, recallAt1: 1, rPrecision: 0.6, mapAtR: 0.6 },
      ],
    }),
    warnings: ['w1', 'w2'],
  };
  // b's example for the same random query: its nearest neighbour is right.
  b.examples = [
    { selection: 'random', kind: 'success', query: { id: 'bag/1.png', label: 'bag' }, averagePrecision: 1, neighbours: [{ id: 'bag/3.png', label: 'bag', similarity: 0.95, correct: true }] },
    { selection: 'worst', kind: 'failure', query: { id: 'bag/4.png', label: 'bag' }, averagePrecision: 0, neighbours: [{ id: 'shirt|2.png', label: 'shirt & <tie>', similarity: 0.7, correct: false }] },
  ];

  it('report.json: format tag, definitions, command; one run repeated at the top, several only side by side in runs', () => {
    const report = buildReport([a, b], ['dml', 'eval', 'a.onnx', 'b.onnx']);
    expect(report.format).to.equal(REPORT_FORMAT);
    expect(report.definitions).to.equal(METRIC_DEFINITIONS);
    expect(report.definitions.nmiPlus).to.match(/10 x the number of distinct labels/);
    expect(report.command).to.deep.equal(['dml', 'eval', 'a.onnx', 'b.onnx']);
    expect(report.runs).to.deep.equal([a, b]);
    expect(isSingleRunReport(report)).to.equal(false);
    expect(report).not.to.have.any.keys('metrics', 'name', 'model', 'dataset', 'parameters', 'timings', 'examples');
    const single = buildReport([a], ['dml', 'eval', 'a.onnx']);
    expect(isSingleRunReport(single)).to.equal(true);
    expect(single.metrics).to.equal(a.metrics);
    expect(single.name).to.equal('a.onnx');
    expect(single.runs).to.deep.equal([a]);
    // The top level gathers every run's warnings, each once.
    expect(buildReport([{ ...a, warnings: ['w2'] }, b], []).warnings).to.deep.equal(['w2', 'w1']);
    expect(report.warnings).to.deep.equal(['w1', 'w2']);
    expect(report.versions).to.have.keys(['dmlkit', 'node', 'onnxruntime-node', 'sharp', 'hnswlib-node']);
    // sharp does not export its package.json: its version is read from the file above its entry.
    for (const name of ['onnxruntime-node', 'sharp', 'hnswlib-node']) expect(report.versions[name], name).to.match(/^\d+\.\d+\.\d+/);
    expect(() => buildReport([], [])).to.throw(RangeError);
  });

  it('the Markdown table: one row per run, NMI once, the 10x point labelled NMI+, n/a where a run lacks a point', () => {
    const table = reportMarkdown(buildReport([a, b], ['dml']));
    const lines = table.split('\n');
    // The 1x point (k=2, the 2 labels) is the NMI column already: no "NMI k=2" beside it.
    expect(lines[0]).to.equal('| model | R@1 | R@4 | R-Prec | MAP@R | mAP | MRR | NMI | AMI | F1 | NMI+ k=20 | lone q |');
    expect(lines[1]).to.equal('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    expect(lines[2]).to.equal('| a.onnx | 50.00 | 100.00 | 50.00 | 25.00 | 30.00 | 75.00 | 30.00 | 20.00 | 50.00 | 40.00 | 1 |');
    expect(lines[3]).to.equal('| b.onnx | 75.00 | 100.00 | 50.00 | 25.00 | 30.00 | 75.00 | 35.00 | 20.00 | 50.00 | n/a | 1 |');
    expect(table).to.include('Index: exact search.');
    expect(table).to.include('10 queries, 10 gallery items, query set = gallery set (self excluded by id)');
    // Other points keep "NMI k=": a 5x point at 10 clusters.
    const c = run('c.onnx', 0.5, [[2, 0.3], [10, 0.35], [20, 0.4]], { nmiPlus: 0.4 });
    expect(reportMarkdown(buildReport([c], ['dml'])).split('\n')[0]).to.equal('| model | R@1 | R@4 | R-Prec | MAP@R | mAP | MRR | NMI | AMI | F1 | NMI k=10 | NMI+ k=20 | lone q |');
  });

  it('the HTML page: real tables (metrics, per class, parameters), escaped text, both charts', () => {
    const report = buildReport([a, b], ['dml', 'eval', '--data', 'folder:<x & y>']);
    const html = reportHtml(report);
    expect(html).to.include('folder:&lt;x &amp; y&gt;');
    expect(html).not.to.include('<x & y>');
    expect(html).not.to.include('<pre>');
    expect(html.match(/<svg/g)?.length).to.equal(3); // Recall@K, NMI curve, per-class Recall@1 bars (no diagnostics recorded: no histograms)
    expect(html).to.include('NMI curve (NMI over cluster counts)');
    expect(html).to.include('<th>model</th><th class="num">R@1</th>');
    expect(html).to.include('<tr><td>a.onnx</td><td class="num">50.00</td><td class="num">100.00</td>');
    expect(html).to.include('<h3>Per class, the 3 of 3 classes where the models disagree most (MAP@R in %; Δ = percentage points against a.onnx)</h3>');
    expect(html).to.include('<tr><td>shirt &amp; &lt;tie&gt;</td><td class="num">4</td><td class="num">10.00</td><td class="num">50.00</td><td class="num">+40.00</td></tr>');
    expect(html).to.include('<tr><td>parameters.kmeans.seed</td><td>0</td></tr>');
    expect(html).to.include('<tr><td>parameters.clusterCounts</td><td>1x, 10x</td></tr>');
    expect(html).to.include('<tr><td>dataset.skippedImages</td><td>0</td></tr>');
    // One run: its worst classes.
    const single = reportHtml(buildReport([a], ['dml']));
    expect(single).to.include('<h3>Worst classes of a.onnx (2 of 2; values in %)</h3>');
    expect(single).to.include('<tr><td>shirt &amp; &lt;tie&gt;</td><td class="num">4</td><td class="num">25.00</td><td class="num">20.00</td><td class="num">10.00</td></tr>');
  });

  it('compares models per class in one table: MAP@R per model, Δ against the first, largest disagreement first', () => {
    const { header, rows, total } = perClassComparisonTable(buildReport([a, b], ['dml']));
    expect(header).to.deep.equal(['class', 'queries', 'MAP@R a.onnx', 'MAP@R b.onnx', 'Δ b.onnx']);
    expect(total).to.equal(3);
    expect(rows).to.deep.equal([
      ['shirt & <tie>', '4', '10.00', '50.00', '+40.00'],
      ['bag', '6', '30.00', '20.00', '-10.00'],
      ['hat', '2', 'n/a', '60.00', 'n/a'],
    ]);
    const text = perClassMarkdown(buildReport([a, b], ['dml']));
    expect(text).to.include('| class | queries | MAP@R a.onnx | MAP@R b.onnx | Δ b.onnx |');
    expect(text).to.include('| shirt & <tie> | 4 | 10.00 | 50.00 | +40.00 |');
    expect(perClassComparisonTable(buildReport([a, b], ['dml']), 1).rows).to.have.length(1);
  });

  it('the HTML page\'s examples: each random query once with every model\'s neighbours under it, then each model\'s worst', () => {
    const thumbnails = new Map([['bag/1.png', 'data:image/jpeg;base64,AAAA']]);
    const html = reportHtml(buildReport([a, b], ['dml']), { thumbnails });
    expect(html.match(/<div class="example-query"/g)).to.have.length(1);
    const query = html.slice(html.indexOf('<div class="example-query" data-query="bag/1.png">'), html.indexOf('Worst queries of a.onnx'));
    expect(query).to.include('<figure class="query"><img src="data:image/jpeg;base64,AAAA" alt="bag/1.png" title="bag/1.png"><figcaption>query: bag</figcaption></figure>');
    expect(query).to.include('<div class="example failure" data-model="a.onnx"><div class="example-kind">a.onnx: failure (nearest neighbour has another label), AP@R 50.00</div>');
    expect(query).to.include('<div class="example success" data-model="b.onnx"><div class="example-kind">b.onnx: success (nearest neighbour has the same label), AP@R 100.00</div>');
    expect(query).to.include('<figure class="incorrect"><span class="no-thumb" title="shirt|2.png">shirt|2.png</span><figcaption>✗ shirt &amp; &lt;tie&gt;<br>0.900</figcaption></figure>');
    expect(query).to.include('<figure class="correct"><span class="no-thumb" title="bag/3.png">bag/3.png</span><figcaption>✓ bag<br>0.800</figcaption></figure>');
    // Worst queries: per model, with the query's own figure.
    const worstA = html.slice(html.indexOf('Worst queries of a.onnx'), html.indexOf('Worst queries of b.onnx'));
    expect(worstA).to.include('<div class="example worst success" data-model="a.onnx"><div class="example-kind">success (nearest neighbour has the same label), AP@R 25.00</div>');
    expect(worstA).to.include('<figure class="correct"><img src="data:image/jpeg;base64,AAAA" alt="bag/1.png" title="bag/1.png"><figcaption>✓ bag<br>0.800</figcaption></figure>');
  });

  it('report.md: metrics, per class, the random queries lined up across models, the worst per model, parameters', () => {
    const report = buildReport([a, b], ['dml']);
    const examples = examplesMarkdown(report);
    expect(examples).to.include('Retrieval examples: 1 seeded random queries, the same for every model');
    expect(examples).to.include('| query | model | kind | AP@R | #1 | #2 |');
    expect(examples).to.include('| bag (bag/1.png) | a.onnx | failure | 50.00 | ✗ shirt & <tie> (0.900) shirt\\|2.png | ✓ bag (0.800) bag/3.png |');
    expect(examples).to.include('| bag (bag/1.png) | b.onnx | success | 100.00 | ✓ bag (0.950) bag/3.png |  |');
    expect(examples).to.include('Worst queries of a.onnx (the 1 of lowest AP@R):');
    expect(examples).to.include('| bag (bag/3.png) | success | 25.00 | ✓ bag (0.800) bag/1.png |  |');
    const file = reportMarkdownFile(report);
    expect(file.indexOf('| model |')).to.be.below(file.indexOf('Per class, the 3 of 3 classes'));
    expect(file.indexOf('Per class, the 3 of 3 classes')).to.be.below(file.indexOf('Retrieval examples: 1 seeded'));
    expect(file).to.include('| parameters.index.kind | exact |');
    expect(perClassMarkdown(buildReport([a], ['dml']))).to.include('| shirt & <tie> | 4 | 25.00 | 20.00 | 10.00 |');
  });

  it('the Recall@K axis fits the values (0.95 to 0.99 is a slope, not a flat line at the top) and says so', () => {
    expect(autoRange([0.95, 0.97, 0.99])).to.deep.equal([0.92, 1]);
    expect(autoRange([0.5, 0.9])).to.deep.equal([0.4, 1]);
    expect(autoRange([0.1, 0.2, 0.3])).to.deep.equal([0.05, 0.35]);
    expect(fittedRange([2.3, 0.41, 0.12])).to.deep.equal([-0.5, 3]);
    expect(fittedRange([2.3, 0.41, 0.12], [0, Infinity])).to.deep.equal([0, 3]);
    expect(scatterRanges([{ x: 0.8, y: 0.6 }, { x: 0.95, y: 0.9 }])).to.deep.equal({ xRange: [0.75, 1], yRange: [0.55, 0.95] });
    expect(autoRange([])).to.deep.equal([0, 1]);
    const c = run('c.onnx', 0.95, [[2, 0.3]], { recall: { '1': 0.95, '2': 0.97, '4': 0.99 } });
    const svg = recallChartSvg(buildReport([c], ['dml']));
    expect(svg).to.include('Recall@K (axis 0.92 to 1.00, fitted to the values)');
    // Round ticks (every 0.02 over 0.92 to 1), two decimals.
    expect([...svg.matchAll(/dominant-baseline="middle">(0\.\d+|1)<\/text>/g)].map((m) => m[1])).to.deep.equal(['0.92', '0.94', '0.96', '0.98', '1']);
    expect(tickStep(1)).to.equal(0.2);
    expect(tickStep(0.26)).to.equal(0.05);
    expect(tickStep(0.02)).to.equal(0.005);
  });

  it('draws the legend below the plot, never over a curve', () => {
    const svg = nmiChartSvg(buildReport([a, b], ['dml']));
    // 400 px of axes (plot from y=40 to y=344) and one 18 px legend row per run below them.
    expect(svg).to.match(/<svg [^>]*height="436" viewBox="0 0 640 436"/);
    const legendYs = [...svg.matchAll(/<g class="legend"><rect x="64" y="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(legendYs).to.deep.equal([403, 421]);
    const curveYs = [...svg.matchAll(/<circle cx="[\d.]+" cy="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(Math.max(...curveYs)).to.be.at.most(344);
  });

  it('report.md carries no markup from data: HTML and link brackets in names are escaped', () => {
    const hostile = run('<script>alert(1)</script>.onnx', 0.5, [[2, 0.3]]);
    hostile.examples[0]?.neighbours.push({ id: '<img src=x onerror=alert(2)>.png', label: '[click](javascript:alert(3))', similarity: 0.5, correct: false });
    const file = reportMarkdownFile(buildReport([hostile], ['dml', 'eval', '--data', 'folder:<x & y>']));
    expect(file).not.to.match(/<(script|img)/);
    expect(file).not.to.match(/(^|[^\\])\[click\]/);
    expect(file).to.include('&lt;script&gt;alert(1)&lt;/script&gt;.onnx');
    expect(file).to.include('✗ \\[click\\](javascript:alert(3)) (0.500) &lt;img src=x onerror=alert(2)&gt;.png');
    expect(file).to.include('shirt &amp; &lt;tie&gt;');
  });
});
