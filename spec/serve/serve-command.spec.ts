import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    const badWorkers = await runCliCaptured(['serve', fixture.dir, '--workers', '0']);
    expect(badWorkers.stderr).to.equal('dml: Expected a positive integer for --workers but received "0"\n');
    const missing = await runCliCaptured(['serve', path.join(tmp, 'none')]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.equal(`dml: No search index at ${path.join(tmp, 'none')} (index.json is missing)\n`);
    expect(existsSync(path.join(fixture.dir, 'lock'))).to.equal(false);
  });
});
