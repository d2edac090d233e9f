/**
 * @file The README's commands as a user types them after a fresh clone:
 * - every `dml` line of its shell blocks, and every example `--help` shows (COMMAND_EXAMPLES), is
 *   accepted by the real command line: its command, options and arguments (the action is stopped just
 *   before it would run);
 * - every repository file those lines name exists, and a training config among them parses with the
 *   model file it names;
 * - `npm start` is the command the README says, and the TensorFlow.js and LanceDB versions its install
 *   lines name are the ones package.json accepts;
 * - the lines that need nothing but the repository run as written (Evaluate, and Serve's index build) in
 *   a scratch folder holding links to the repository's models/, data/, scripts/ and node_modules/. The others read
 *   Fashion-MNIST from a Debian package or a run made before them, which the specs do not depend on.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { COMMAND_EXAMPLES, createProgram } from '../lib/cli/program.js';
import { parseTrainConfig } from '../lib/train/config.js';
import { runCliCaptured } from './helpers/run-cli.js';

const root = process.cwd();
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');

/** The lines of the README's ```sh blocks, comments and blank lines dropped. */
const shellLines = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
  .flatMap((block) => (block[1] as string).split('\n'))
  .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
  .filter((line) => line !== '');

/** A `dml` line as its arguments (the README's commands quote nothing). */
const argumentsOf = (line: string): string[] => line.split(/\s+/).slice(1);

const readmeCommands = shellLines.filter((line) => line.startsWith('dml '));

/** Thrown by the hook that stops a command just before its action. */
class Accepted extends Error {}

/** Whether the command line accepts `args`: commander's checks, up to the action, which never runs. */
async function accepted(args: string[]): Promise<string> {
  const program = createProgram(args);
  program.hook('preAction', () => {
    throw new Accepted();
  });
  // commander prints its own usage errors: keep them out of the spec's output, but in the failure.
  let printed = '';
  program.configureOutput({ writeErr: (text) => (printed += text), outputError: (text) => (printed += text) });
  for (const command of program.commands.flatMap((c) => [c, ...c.commands])) command.configureOutput({ writeErr: (text) => (printed += text), outputError: (text) => (printed += text) });
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (err instanceof Accepted) return 'accepted';
    return `refused: ${printed.trim() || (err as Error).message}`;
  }
  return 'accepted (no action)';
}

/** Repository paths a command line names: arguments under models/, data/ or scripts/ (a `folder:` prefix dropped). */
function repositoryPaths(args: readonly string[]): string[] {
  return args.map((a) => a.replace(/^folder:/, '')).filter((a) => /^(models|data|scripts)\//.test(a));
}

/** Whether `version` (x.y.z, or the range itself) is within the peer range `range`: `^x.y.z`, `x.y.z` or `>=a <=b`, the forms package.json uses. */
function satisfies(version: string, range: string): boolean {
  if (version === range) return true;
  const parts = (v: string): number[] => v.split('.').map(Number);
  const compare = (a: string, b: string): number => parts(a).reduce((order, n, i) => order || n - (parts(b)[i] ?? 0), 0);
  const caret = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range);
  if (caret) return parts(version)[0] === Number(caret[1]) && compare(version, range.slice(1)) >= 0;
  const bounds = /^>=(\S+) <=(\S+)$/.exec(range);
  if (bounds) return compare(version, bounds[1] as string) >= 0 && compare(version, bounds[2] as string) <= 0;
  return version === range;
}

describe('README: the commands as written', function () {
  this.timeout(120_000);

  it('has the commands this spec reads (install, test, evaluate, train, export, compare, index, serve)', () => {
    expect(shellLines.slice(0, 2)).to.deep.equal(['npm ci && npm start', 'npm test']);
    expect(readmeCommands.map((line) => line.split(/\s+/).slice(0, 2).join(' '))).to.include.members(['dml eval', 'dml train', 'dml export', 'dml compare', 'dml index', 'dml serve']);
  });

  it('every dml line, and every example of --help, is accepted by the command line; a misspelt option is not', async () => {
    const examples = Object.values(COMMAND_EXAMPLES).flat();
    for (const line of [...readmeCommands, ...examples]) expect(await accepted(argumentsOf(line)), line).to.equal('accepted');
    expect(await accepted(['eval', 'models/default.onnx', '--data', 'folder:data/default', '--cluster-count', '1x'])).to.match(/^refused: .*unknown option '--cluster-count'/);
    expect(await accepted(['index', 'build', '--out', 'runs/index'])).to.match(/^refused: .*missing required argument/);
  });

  it('the repository files they name exist, and a training config parses with the model it names', () => {
    const examples = Object.values(COMMAND_EXAMPLES).flat();
    const named = [...new Set([...readmeCommands, ...examples].flatMap((line) => repositoryPaths(argumentsOf(line))))];
    expect(named).to.include.members(['models/default.onnx', 'data/default', 'scripts/configs/fashion-mnist-finetune.json']);
    for (const file of named) expect(existsSync(path.join(root, file)), file).to.equal(true);
    for (const file of named.filter((f) => f.startsWith('scripts/configs/'))) {
      const config = parseTrainConfig(JSON.parse(readFileSync(path.join(root, file), 'utf8')), file);
      if (config.model.kind === 'onnx') expect(existsSync(path.join(root, config.model.path)), `${file}: model.path`).to.equal(true);
    }
  });

  it('npm start runs the command the README says, and the install lines name the versions package.json accepts', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string>; peerDependencies: Record<string, string> };
    const said = /`npm start` runs `dml ([^`]+)`/.exec(readme)?.[1];
    expect(pkg.scripts['start']).to.match(/^node (--\S+ )*dist\/bin\/dml\.js /);
    expect(pkg.scripts['start']?.replace(/^node (--\S+ )*dist\/bin\/dml\.js /, '')).to.equal(said);
    const installs = shellLines.filter((line) => line.startsWith('npm install @')).flatMap((line) => line.split(/\s+/).slice(2));
    expect(installs).to.have.length.above(3);
    for (const spec of installs) {
      const at = spec.lastIndexOf('@');
      const [name, version] = [spec.slice(0, at), spec.slice(at + 1)];
      expect(satisfies(version, pkg.peerDependencies[name] ?? ''), `${spec} against package.json's ${pkg.peerDependencies[name]}`).to.equal(true);
    }
  });

  it('Evaluate and the index build run as written in a fresh folder with the repository', async () => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'dml-readme-'));
    // A clone after `npm ci`: its node_modules too (the decode processes load tsx from there in the specs).
    for (const folder of ['models', 'data', 'scripts', 'node_modules']) symlinkSync(path.join(root, folder), path.join(scratch, folder));
    const runnable = readmeCommands.filter((line) => repositoryPaths(argumentsOf(line)).includes('data/default') && !line.startsWith('dml serve'));
    expect(runnable.map((line) => line.split(/\s+/).slice(0, 3).join(' '))).to.deep.equal(['dml eval models/default.onnx', 'dml index build']);
    try {
      process.chdir(scratch);
      for (const line of runnable) {
        const result = await runCliCaptured(argumentsOf(line));
        expect(result.code, `${line}\n${result.stderr}`).to.equal(0);
      }
      expect(existsSync(path.join(scratch, 'runs/eval/report.json'))).to.equal(true);
      expect(existsSync(path.join(scratch, 'runs/index/index.json'))).to.equal(true);
    } finally {
      process.chdir(root);
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
