import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { SearchIndexStore } from '../../lib/index-store/hnsw-store.js';
import { exited, startServer } from '../helpers/dml-process.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { buildFixtureIndex, type FixtureIndex } from './fixtures.js';

describe('dml serve', function () {
  this.timeout(60_000);
  let tmp: string;
  let fixture: FixtureIndex;

  before(async () => {
    tmp = makeTempDir('dml-serve-');
    fixture = await buildFixtureIndex(tmp);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('serves an index over HTTP and shuts down cleanly on SIGTERM, keeping what was added', async () => {
    const tokenFile = path.join(tmp, 'token');
    writeFileSync(tokenFile, 'serve-spec-token-0123456789\n');
    const server = startServer(fixture.dir, ['--allow-writes', '--token-file', tokenFile]);
    const url = await server.url;
    expect(server.output().stdout).to.match(new RegExp(`^dml serve: serving ${fixture.dir} \\(the model runs on cpu\\), listening on ${url}\\n$`));
    const health = (await (await fetch(`${url}/healthz`)).json()) as { items: number };
    expect(health.items).to.equal(24);
    const image = readFileSync(path.join(fixture.images, 'bag', 't10k-00018.png'));
    const denied = await fetch(`${url}/items?label=posted&id=posted-1`, { method: 'POST', headers: { 'content-type': 'image/png' }, body: image });
    expect(denied.status).to.equal(401);
    const added = await fetch(`${url}/items?label=posted&id=posted-1`, {
      method: 'POST',
      headers: { 'content-type': 'image/png', authorization: 'Bearer serve-spec-token-0123456789' },
      body: image,
    });
    expect(added.status).to.equal(201);
    const search = (await (await fetch(`${url}/search?k=2`, { method: 'POST', headers: { 'content-type': 'image/png' }, body: image })).json()) as {
      neighbours: Array<{ id: string }>;
    };
    expect(search.neighbours.map((n) => n.id).sort()).to.deep.equal(['bag/t10k-00018.png', 'posted-1']);

    server.child.kill('SIGTERM');
    expect(await exited(server.child)).to.equal(0);
    expect(server.output().stderr).to.equal('dml serve: SIGTERM, shutting down\ndml serve: stopped\n');
    expect(readdirSync(fixture.dir).sort()).to.deep.equal(['gen-2', 'index.json', 'model', 'uploads']);
    const store = await SearchIndexStore.open(fixture.dir);
    expect(store.get('posted-1')?.label).to.equal('posted');
    expect(store.count).to.equal(25);
    await store.close();
  });

  it('shutdown ends within --shutdown-grace whatever the clients do (half a header, a body that never comes): final snapshot written, lock released', async () => {
    const dir = path.join(tmp, 'grace');
    cpSync(fixture.dir, dir, { recursive: true });
    const tokenFile = path.join(tmp, 'token-grace');
    writeFileSync(tokenFile, 'serve-spec-token-0123456789\n');
    const server = startServer(dir, ['--allow-writes', '--token-file', tokenFile, '--shutdown-grace', '1']);
    const url = await server.url;
    const added = await fetch(`${url}/items?label=posted&id=grace-1`, {
      method: 'POST',
      headers: { 'content-type': 'image/png', authorization: 'Bearer serve-spec-token-0123456789' },
      body: readFileSync(path.join(fixture.images, 'bag', 't10k-00018.png')),
    });
    expect(added.status).to.equal(201);
    const port = Number(new URL(url).port);
    const open = (text: string): Promise<Socket> =>
      new Promise((resolve) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(text, () => resolve(socket)));
        socket.on('error', () => undefined);
      });
    const sockets = [
      await open('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: '),
      await open('POST /search?k=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\nContent-Length: 1000\r\n\r\n0123456789'),
    ];
    const start = Date.now();
    server.child.kill('SIGTERM');
    const code = await Promise.race([exited(server.child), new Promise<string>((resolve) => setTimeout(() => resolve('still running after 20 s'), 20_000))]);
    server.child.kill('SIGKILL');
    sockets.forEach((socket) => socket.destroy());
    expect(code, server.output().stderr).to.equal(0);
    expect(Date.now() - start).to.be.below(15_000);
    expect(server.output().stderr).to.equal('dml serve: SIGTERM, shutting down\ndml serve: stopped\n');
    expect(existsSync(path.join(dir, 'lock'))).to.equal(false);
    const store = await SearchIndexStore.open(dir);
    expect(store.get('grace-1')?.label).to.equal('posted');
    expect(store.journalLines).to.equal(0);
    await store.close();
  });

  it('--host 0.0.0.0 prints the address it listens on and warns that writes are open to the network', async () => {
    const tokenFile = path.join(tmp, 'token-wide');
    writeFileSync(tokenFile, 'serve-spec-token-0123456789\n');
    const server = startServer(fixture.dir, ['--host', '0.0.0.0', '--allow-writes', '--token-file', tokenFile]);
    const url = await server.url;
    expect(url).to.match(/^http:\/\/0\.0\.0\.0:\d+$/);
    const port = new URL(url).port;
    expect(server.output().stderr).to.equal(
      `dml serve: warning: listening on http://0.0.0.0:${port}, reachable from other machines; writes are open to the network, guarded by the token alone (requests must name an allowed Host: --allowed-host)\n`,
    );
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).to.equal(200);
    server.child.kill('SIGTERM');
    expect(await exited(server.child)).to.equal(0);
  });

  it('fails with one line and exit code 2 or 1 on bad flags or a missing index', async () => {
    const badPort = await runCliCaptured(['serve', fixture.dir, '--port', '70000']);
    expect(badPort).to.deep.equal({ code: 2, stdout: '', stderr: 'dml: Expected an integer in [0, 65535] for --port but received "70000"\n' });
    const noToken = await runCliCaptured(['serve', fixture.dir, '--allow-writes']);
    expect(noToken).to.deep.equal({ code: 2, stdout: '', stderr: 'dml: --allow-writes needs a write token: --token-file <file> or the DML_SERVE_TOKEN environment variable\n' });
    const range = 'a number of seconds in (0, 2147483.647] (the longest delay a Node timer holds)';
    const longRefresh = await runCliCaptured(['serve', `lance:${fixture.dir}`, '--refresh-seconds', '3000000']);
    expect(longRefresh).to.deep.equal({ code: 2, stdout: '', stderr: `dml: Expected ${range} for --refresh-seconds but received "3000000"\n` });
    const badGrace = await runCliCaptured(['serve', fixture.dir, '--shutdown-grace', '-1']);
    expect(badGrace).to.deep.equal({ code: 2, stdout: '', stderr: `dml: Expected ${range.replace('(', '[')} for --shutdown-grace but received "-1"\n` });
    // --token-file: a regular file others cannot write, holding the token alone (issue 38).
    const pipe = path.join(tmp, 'token-pipe');
    expect(spawnSync('mkfifo', [pipe]).status).to.equal(0);
    const fromPipe = await runCliCaptured(['serve', fixture.dir, '--allow-writes', '--token-file', pipe]);
    expect(fromPipe).to.deep.equal({ code: 2, stdout: '', stderr: `dml: Cannot read --token-file ${pipe}: a FIFO (named pipe), not a regular file\n` });
    const twoLines = path.join(tmp, 'token-two-lines');
    writeFileSync(twoLines, 'serve-spec-token-0123456789\nsecond-line-0123456789\n', { mode: 0o600 });
    const refusedLines = await runCliCaptured(['serve', fixture.dir, '--allow-writes', '--token-file', twoLines]);
    expect(refusedLines).to.deep.equal({ code: 2, stdout: '', stderr: `dml: --token-file ${twoLines} holds 2 lines; expected the token alone on one line\n` });
    const open = path.join(tmp, 'token-open');
    writeFileSync(open, 'serve-spec-token-0123456789\n');
    chmodSync(open, 0o666);
    const refusedMode = await runCliCaptured(['serve', fixture.dir, '--allow-writes', '--token-file', open]);
    expect(refusedMode).to.deep.equal({ code: 2, stdout: '', stderr: `dml: --token-file ${open} is writable by others (mode 666), who could set the write token; chmod o-w it (600 is usual)\n` });
    const badWorkers = await runCliCaptured(['serve', fixture.dir, '--workers', '0']);
    expect(badWorkers.stderr).to.equal('dml: Expected a positive integer for --workers but received "0"\n');
    const missing = await runCliCaptured(['serve', path.join(tmp, 'none')]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.equal(`dml: No search index at ${path.join(tmp, 'none')} (index.json is missing)\n`);
    expect(existsSync(path.join(fixture.dir, 'lock'))).to.equal(false);
  });
});
