/**
 * @file The LanceDB store with its table on S3 (`dml index build --out lance:<folder> --lance-table
 * s3://bucket/prefix`), against an S3-compatible server on loopback (s3rver, a dev dependency, started
 * here): two `dml serve` processes read the table while `dml index add` writes to it and is killed
 * with SIGKILL; both then find every item the writer acknowledged. Credentials reach LanceDB through
 * the standard AWS environment variables only, and no process prints them.
 *
 * Skipped with a note where `@lancedb/lancedb` is not installed, except in CI (CI=true).
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { exited, killAfterAcknowledged, startDml, startServer } from '../helpers/dml-process.js';
import { runCliCaptured } from '../helpers/run-cli.js';
import { makeTempDir } from '../image/image-fixtures.js';
import { copyImages, MODEL } from '../serve/fixtures.js';
import { lancedbInstalled, requireLancedb } from '../helpers/lancedb.js';

/** The part of s3rver's API used here. */
interface S3rverServer {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (options: { port: number; address: string; silent: boolean; directory: string; configureBuckets: Array<{ name: string }> }) => S3rverServer;

/** s3rver checks request signatures against this key pair (its fixed credentials). */
const KEY = 'S3RVER';

describe('dml index and dml serve on lance: with the table on S3 (s3rver on loopback)', function () {
  this.timeout(180_000);
  let dir: string;
  let server: S3rverServer;
  let env: NodeJS.ProcessEnv;
  /** Names of the AWS variables this spec sets in its own process (for the in-process CLI runs). */
  const saved = new Map<string, string | undefined>();

  before(async function () {
    requireLancedb(this, await lancedbInstalled());
    dir = makeTempDir('dml-index-s3-');
    mkdirSync(path.join(dir, 's3'));
    const S3rver = ((await import('s3rver' as string)) as { default: S3rverClass }).default;
    server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: path.join(dir, 's3'), configureBuckets: [{ name: 'dmlkit' }] });
    const { port } = await server.run();
    const aws = { AWS_ACCESS_KEY_ID: KEY, AWS_SECRET_ACCESS_KEY: KEY, AWS_REGION: 'us-east-1', AWS_ENDPOINT: `http://127.0.0.1:${port}`, AWS_ALLOW_HTTP: 'true' };
    for (const [name, value] of Object.entries(aws)) {
      saved.set(name, process.env[name]);
      process.env[name] = value;
    }
    env = { ...process.env };
  });
  after(async () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await server?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('two replicas serve the S3 table while a writer adds and is killed; both then hold every acknowledged item; no credentials printed', async () => {
    const images = copyImages(path.join(dir, 'images'), 3, 4);
    const out = path.join(dir, 'index');
    const built = await runCliCaptured(['index', 'build', MODEL, `folder:${images}`, '--out', `lance:${out}`, '--lance-table', 's3://dmlkit/images', '--no-cache', '--device', 'cpu']);
    expect(built.code, built.stderr).to.equal(0);
    // The folder holds the metadata and the model; the table is on the S3 server.
    expect(readdirSync(out).sort()).to.deep.equal(['index.json', 'model']);
    expect(readdirSync(path.join(dir, 's3', 'dmlkit'), { recursive: true }).some((name) => String(name).startsWith('images/items.lance'))).to.equal(true);
    const info = JSON.parse((await runCliCaptured(['index', 'info', `lance:${out}`])).stdout) as Record<string, unknown>;
    expect(info).to.deep.include({ kind: 'lance', items: 12, table: 's3://dmlkit/images' });
    // A second build into the same S3 database is refused rather than overwriting the table.
    const again = await runCliCaptured(['index', 'build', MODEL, `folder:${images}`, '--out', `lance:${path.join(dir, 'again')}`, '--lance-table', 's3://dmlkit/images', '--no-cache', '--device', 'cpu']);
    expect(again, again.stderr).to.deep.include({ code: 2, stdout: "" });
    expect(again.stderr).to.equal('dml: Expected a database that holds no table "items" yet for table but received "s3://dmlkit/images"\n');

    const servers = [0, 1].map(() => startServer(`lance:${out}`, ['--refresh-seconds', '0.5', '--log-level', 'info'], env));
    try {
      const urls = await Promise.all(servers.map((s) => s.url));
      const more = copyImages(path.join(dir, 'more'), 4, 4, 20);
      const acknowledged: string[] = [];
      const writer = startDml(['index', 'add', `lance:${out}`, `folder:${more}`, '--batch-size', '1', '--device', 'cpu'], env);
      let writerOutput = '';
      writer.stderr.on('data', (chunk: Buffer) => (writerOutput += chunk.toString()));
      const killed = killAfterAcknowledged(writer, 6, acknowledged);
      let writing = true;
      void killed.then(() => (writing = false));
      let queries = 0;
      const first = readdirSync(images).sort()[0] as string;
      const query = `${first}/${readdirSync(path.join(images, first)).sort()[0] as string}`;
      while (writing) {
        for (const url of urls) {
          const res = await fetch(`${url}/search?id=${encodeURIComponent(query)}&k=3`);
          expect(res.status, await res.text()).to.equal(200);
          queries++;
        }
      }
      expect(await killed, 'the writer was killed before it finished').to.equal(null);
      expect(acknowledged.length).to.be.at.least(6);
      expect(queries).to.be.above(0);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      for (const url of urls) {
        const health = (await (await fetch(`${url}/healthz`)).json()) as { items: number };
        expect(health.items).to.be.at.least(12 + acknowledged.length);
        expect(health.items).to.be.at.most(12 + acknowledged.length + 1);
        for (const id of acknowledged) {
          // 404 for an id the replica does not hold; its thumbnail is read from the image path the table records.
          const res = await fetch(`${url}/items/${encodeURIComponent(id)}/image`);
          expect(res.status, `${url}: ${id}`).to.equal(200);
        }
      }
      for (const { child } of servers) child.kill('SIGTERM');
      await Promise.all(servers.map(({ child }) => exited(child)));
      const printed = [...servers.flatMap((s) => Object.values(s.output())), writerOutput].join('\n');
      expect(printed).to.match(/GET \/healthz|"url":"\/healthz"/);
      expect(printed).not.to.include(KEY);
    } finally {
      for (const { child } of servers) child.kill('SIGTERM');
      await Promise.all(servers.map(({ child }) => exited(child)));
    }
  });
});

