/**
 * Regenerates the measured numbers the docs quote, so they do not drift from what the code does:
 *
 *   npx tsx scripts/tools/update-doc-numbers.ts package         # docs/benchmarks.md: the tarball and its install (runs check-package.sh)
 *   npx tsx scripts/tools/update-doc-numbers.ts default-model   # docs/results.md: the default model on Fashion-MNIST's held-out classes
 *
 * Each writes its block (scripts/tools/doc-blocks.ts) with the date and the command. `default-model`
 * needs Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist) and `npm run build`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { markdownTable, metricsTable } from '../../lib/report/markdown.js';
import type { SingleRunReport } from '../../lib/report/report.js';
import { writeBlock } from './doc-blocks.js';

const today = new Date().toISOString().slice(0, 10);
const what = process.argv[2];

if (what === 'package') {
  const output = execFileSync('bash', ['scripts/tools/check-package.sh'], { encoding: 'utf8' });
  const last = output.trim().split('\n').at(-1) ?? '';
  const m = /^package check passed: (\d+) kB packed \((\d+) files\), installed in (\d+) s, node_modules of the scratch project (\S+)$/.exec(last);
  if (m === null) throw new Error(`check-package.sh ended with an unexpected line: ${last}`);
  const [, kb, files, seconds, modules] = m as unknown as [string, string, string, string, string];
  await writeBlock(
    'docs/benchmarks.md',
    'package',
    `Measured ${today} (\`npx tsx scripts/tools/update-doc-numbers.ts package\`, which runs \`bash scripts/tools/check-package.sh\`, on the 2 shared cores): the tarball is ${Number(kb).toLocaleString('en-US')} kB (${Number(files).toLocaleString('en-US')} files); installing it into a scratch project (npm cache warm, \`ONNXRUNTIME_NODE_INSTALL=skip\`) took ${seconds} s and gives a ${modules.replace(/M$/, ' MB')} \`node_modules\` without TensorFlow.js or LanceDB.`,
  );
  console.log(`docs/benchmarks.md: ${kb} kB, ${files} files, ${seconds} s, ${modules}`);
} else if (what === 'default-model') {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dml-doc-numbers-'));
  try {
    const args = ['eval', 'models/default.onnx', '--data', 'fashion-mnist:/usr/share/datasets/fashion-mnist', '--train-classes', '0-4', '--json', path.join(dir, 'report.json')];
    const started = performance.now();
    execFileSync(process.execPath, ['dist/bin/dml.js', '--quiet', ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
    const seconds = (performance.now() - started) / 1000;
    const report = JSON.parse(readFileSync(path.join(dir, 'report.json'), 'utf8')) as SingleRunReport;
    const table = markdownTable(metricsTable(report)).map((line) => line.replace(/^\| models\/default\.onnx \|/, '| default.onnx |'));
    await writeBlock(
      'docs/results.md',
      'default-model',
      [
        '```sh',
        `node dist/bin/dml.js ${args.slice(0, -2).join(' ')} --out runs/fmnist`,
        '```',
        '',
        ...table,
        '',
        `Measured ${today} (\`npx tsx scripts/tools/update-doc-numbers.ts default-model\`, ${report.metrics.queryCount.toLocaleString('en-US')} held-out images, ${seconds.toFixed(0)} s on the 2 shared cores: embed ${report.timings.embedSeconds?.toFixed(0)} s, search ${report.timings.searchSeconds.toFixed(0)} s, k-means ${report.timings.clusteringSeconds.toFixed(0)} s).`,
      ].join('\n'),
    );
    console.log(table.join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else {
  console.error('usage: npx tsx scripts/tools/update-doc-numbers.ts package|default-model');
  process.exit(2);
}
