#!/usr/bin/env bash
# The package as a consumer gets it: packs dmlkit (npm pack), installs the tarball into a fresh scratch
# project (ONNXRUNTIME_NODE_INSTALL=skip, as a consumer offline must; TensorFlow.js not installed),
# and there checks that
#   - no TensorFlow.js or LanceDB package was installed (optional peer dependencies);
#   - the public API (evaluate, embedImages) works with the shipped default model, decode processes included;
#   - the README's Library example runs as written (the shipped model and images, found by defaultModelPath/defaultDataPath);
#   - a consumer's TypeScript with skipLibCheck: false type-checks against the published typings;
#   - the dml bin runs an eval whose report has the format of the shipped dmlkit/report.schema.json,
#     `dml train` names the missing TensorFlow.js packages, and `dml index info lance:<folder>` the
#     missing LanceDB packages.
# Prints the packed and installed sizes. Needs the repository's node_modules (for tsc) and network
# access to the npm registry only for packuments the npm cache lacks.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
tarball=$(npm pack --silent --pack-destination "$work" 2>/dev/null | tail -1)
mkdir "$work/app" && cd "$work/app"
npm init -y >/dev/null
install_start=$SECONDS
ONNXRUNTIME_NODE_INSTALL=skip npm install --prefer-offline --no-audit --no-fund "$work/$tarball" >/dev/null 2>"$work/install.log" || { cat "$work/install.log"; echo "installing the tarball failed"; exit 1; }
install_seconds=$((SECONDS - install_start))
if [ -e node_modules/@tensorflow ]; then echo "TensorFlow.js was installed with dmlkit: $(ls node_modules/@tensorflow)"; exit 1; fi
if [ -e node_modules/@lancedb ]; then echo "LanceDB was installed with dmlkit: $(ls node_modules/@lancedb)"; exit 1; fi
cat > check.mts <<'TS'
import { createRequire } from 'node:module';
import { embedImages, evaluate, type EmbeddingSet } from 'dmlkit';
const model = createRequire(import.meta.url).resolve('dmlkit/package.json').replace(/package\.json$/, 'models/default.onnx');
const report = await evaluate({ model, data: `folder:${process.argv[2]}`, clusterCounts: ['1x'], workers: 2 });
const r1 = report.metrics.recall['1'] ?? 0;
if (report.metrics.queryCount !== 600 || !(r1 > 0.5)) throw new Error(`unexpected result: ${report.metrics.queryCount} queries, R@1 ${r1}`);
const set: EmbeddingSet = await embedImages(model, [`${process.argv[2]}/bag/t10k-00030.png`]);
if (set.count !== 1 || set.dim !== 64) throw new Error(`embedImages gave ${set.count} x ${set.dim}`);
console.log(`API: evaluate R@1 ${r1} on ${report.metrics.queryCount} images (2 decode processes); embedImages ${set.count} x ${set.dim}`);
TS
cat > tsconfig.json <<'JSON'
{ "compilerOptions": { "strict": true, "skipLibCheck": false, "module": "nodenext", "moduleResolution": "nodenext", "target": "es2022", "outDir": "out", "types": ["node"] }, "files": ["check.mts"] }
JSON
node "$root/node_modules/typescript/bin/tsc" -p . || { echo "the consumer's TypeScript does not type-check"; exit 1; }
node out/check.mjs "$root/data/default"
# The README's Library example, as written, from the scratch project: the shipped model and images through defaultModelPath()/defaultDataPath().
cat > extract-readme-example.cjs <<'JS'
const m = /### Library\n\n```js\n([\s\S]*?)```/.exec(require('fs').readFileSync(process.argv[2], 'utf8'));
if (!m) process.exit(1);
require('fs').writeFileSync('readme-example.mjs', m[1]);
JS
node extract-readme-example.cjs "$root/README.md" || { echo "README.md has no Library example"; exit 1; }
node readme-example.mjs >"$work/readme.log" 2>&1 || { cat "$work/readme.log"; echo "the README's Library example failed in the scratch project"; exit 1; }
grep -q "^2 64 \[ 't10k-00000.png', '#1' \]$" "$work/readme.log" || { cat "$work/readme.log"; echo "the README's Library example printed something else"; exit 1; }
echo "api: the README's Library example runs in the scratch project: $(head -1 "$work/readme.log")"
npx dml eval node_modules/dmlkit/models/default.onnx --data "folder:$root/data/default" --k 1 --cluster-counts 1x --json report.json >/dev/null 2>"$work/eval.log" || { cat "$work/eval.log"; echo "dml eval failed"; exit 1; }
node -e "const r = require('./report.json'); const s = require('dmlkit/report.schema.json'); if (!(r.metrics.recall['1'] > 0.5) || r.format !== s.properties.format.const) process.exit(1); console.log('bin: dml eval R@1', r.metrics.recall['1'], 'in', r.format, '(the format of the shipped dmlkit/report.schema.json)')"
echo '{}' > train.json
if npx dml train --config train.json 2>"$work/train.log"; then echo "dml train ran without TensorFlow.js"; exit 1; fi
grep -q 'needs TensorFlow.js, an optional peer dependency of dmlkit that is not installed: npm install @tensorflow/tfjs' "$work/train.log" || { cat "$work/train.log"; echo "dml train did not name the missing packages"; exit 1; }
echo "bin: dml train names the missing TensorFlow.js packages"
node --input-type=module -e "import('dmlkit/train').then(() => process.exit(1), (e) => { console.log(e.message); process.exit(e.code === 'E_NOT_FOUND' ? 0 : 1); })" >"$work/import.log" 2>&1 || { cat "$work/import.log"; echo "import 'dmlkit/train' without TensorFlow.js did not give dml train's message"; exit 1; }
grep -q "^import 'dmlkit/train' needs TensorFlow.js, an optional peer dependency of dmlkit that is not installed: npm install @tensorflow/tfjs" "$work/import.log" || { cat "$work/import.log"; exit 1; }
echo "api: import 'dmlkit/train' names the missing TensorFlow.js packages"
mkdir lance-index && echo '{"format":"dmlkit.lance-index/1","dim":2,"ann":{},"table":null}' > lance-index/index.json
if npx dml index info lance:lance-index 2>"$work/lance.log"; then echo "dml index info lance: ran without LanceDB"; exit 1; fi
grep -q '^dml: Index lance:lance-index needs LanceDB, an optional peer dependency of dmlkit that is not installed: npm install @lancedb/lancedb@0.37.1 apache-arrow@18.1.0$' "$work/lance.log" || { cat "$work/lance.log"; echo "dml index info lance: did not name the missing packages"; exit 1; }
echo "bin: dml index info lance:<folder> names the missing LanceDB packages"
echo "package check passed: $(( $(stat -c %s "$work/$tarball") / 1000 )) kB packed ($(tar -tzf "$work/$tarball" | wc -l) files), installed in ${install_seconds} s, node_modules of the scratch project $(du -sh node_modules | cut -f1)"
