/**
 * @file `dml ... --help`: every option that takes a value shows its default the same way or says it
 * is required; every command ends with an example and the exit codes; usage errors carry the same
 * `dml: ` prefix as every other error.
 */
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import type { Command } from 'commander';
import { EXIT_CODES_HELP, optionDescription } from '../../lib/cli/help.js';
import { COMMAND_EXAMPLES, createProgram } from '../../lib/cli/program.js';
import { DEFAULT_LIMIT_INPUT_PIXELS } from '../../lib/image/decode.js';
import { runCliCaptured } from '../helpers/run-cli.js';

function commands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...commands(c)]);
}

describe('dml --help', () => {
  it('help into a reader that has stopped (dml train --help | head, | true) exits 0 without an error', function () {
    this.timeout(30_000);
    // `true` exits without reading, long before node writes: the write meets a closed pipe (EPIPE).
    const run = spawnSync('bash', ['-c', `'${process.execPath}' --import tsx bin/dml.ts train --help | true; exit \${PIPESTATUS[0]}`], { encoding: 'utf8' });
    expect(run.stderr).to.equal('');
    expect(run.status).to.equal(0);
  });

  const program = createProgram([]);

  it('every option with a value shows "(default: ...)" (unquoted) or "(required...)"', () => {
    const lines: string[] = [];
    for (const command of [program, ...commands(program)]) {
      for (const option of command.options) {
        const text = optionDescription(option);
        if (option.isBoolean() || option.negate) continue;
        lines.push(text);
        expect(text, `${command.name()} ${option.flags}`).to.match(/\((default: [^"][^)]*|required[^)]*)\)/);
      }
    }
    expect(lines.length).to.be.above(60);
    const evalCommand = program.commands.find((c) => c.name() === 'eval') as Command;
    const help = evalCommand.helpInformation();
    expect(help).to.include('(default: exact)');
    expect(help).not.to.include('(default: "');
    const described = (flag: string): string => optionDescription(evalCommand.options.find((o) => o.long === flag)!);
    expect(described('--threads')).to.equal("onnxruntime intra-op threads (default: onnxruntime's choice)");
    expect(described('--limit-input-pixels')).to.include(`(default: ${DEFAULT_LIMIT_INPUT_PIXELS})`);
    expect(described('--cluster-set')).to.match(/\(default: union\)$/);
    const train = program.commands.find((c) => c.name() === 'train') as Command;
    expect(train.helpInformation()).to.match(/--config <file\.json>\s+training configuration \(see docs\/configuration\.md\)\s+\(required\)/);
  });

  it('every command ends with an example and the exit codes', async () => {
    const all = commands(program);
    expect(all.map((c) => (c.parent?.parent ? `${c.parent.name()} ${c.name()}` : c.name())).sort()).to.deep.equal(Object.keys(COMMAND_EXAMPLES).sort());
    const res = await runCliCaptured(['eval', '--help']);
    expect(res.code).to.equal(0);
    expect(res.stdout).to.include('\nExample:\n  $ dml eval models/default.onnx --data folder:data/default --out runs/default --examples 6\n');
    expect(res.stdout.trimEnd().endsWith(EXIT_CODES_HELP)).to.equal(true);
    expect(EXIT_CODES_HELP).to.equal('Exit codes: 0 success, 1 runtime failure (bad data, a model that will not load, I/O), 2 usage error (a bad flag or value), 130 interrupted (Ctrl-C).');
    const serve = await runCliCaptured(['serve', '--help']);
    expect(serve.stdout).to.include('  $ dml serve runs/index --port 8080\n');
  });

  it('usage errors start with "dml: " as every other error does', async () => {
    const res = await runCliCaptured(['eval', '--no-such-flag']);
    expect(res.code).to.equal(2);
    expect(res.stderr.split('\n')[0]).to.equal("dml: unknown option '--no-such-flag'");
    const missing = await runCliCaptured(['train']);
    expect(missing.code).to.equal(2);
    expect(missing.stderr.split('\n')[0]).to.equal("dml: required option '--config <file.json>' not specified");
  });
});
