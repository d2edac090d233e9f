#!/usr/bin/env bash
# Packs what a run on a GPU machine without Node.js needs into .device/ at the project root (git-ignored
# through .git/info/exclude): node, the Vulkan loader (for onnxruntime's WebGPU provider) and the built
# app (dist, node_modules without TypeScript, TensorFlow.js's browser bundles and the optional LanceDB
# binary, models, data). Run it after `npm ci` (dist/ built). On the GPU machine, from the project root:
#   bash .device/unpack.sh && cd /opt/app && <your command>
# or, for the graph trainer's checks: bash .device/unpack.sh && bash scripts/gpu/graph-trainer-gpu.sh OUT
# Extra npm packages for that machine (e.g. `webgpu`): DEVICE_EXTRA="node_modules/webgpu" adds them.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
[ -d dist ] && [ -d node_modules ] || { echo "run npm ci first (dist/ and node_modules/ are needed)"; exit 1; }
mkdir -p .device .git/info
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
if [ ! -f .device/node.xz ]; then
  echo "compressing node (about a minute)"; bin=$(mktemp)
  strip -o "$bin" "$(command -v node)" 2>/dev/null || cp "$(command -v node)" "$bin"
  xz -T0 -9 -c "$bin" > .device/node.xz; rm -f "$bin"
fi
if ! ls .device/libvulkan1_*.deb >/dev/null 2>&1; then
  lists=$(mktemp -d); mkdir -p "$lists/partial"; o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
  apt-get $o update >/dev/null 2>&1 || true
  (cd .device && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null 2>&1) || echo "warning: Vulkan loader debs not downloaded (WebGPU needs a Vulkan loader on the device)"
fi
stage=$(mktemp -d)
tar -cf - --exclude='node_modules/.lancedb' --exclude='node_modules/@lancedb' --exclude='node_modules/@tensorflow' --exclude='node_modules/@typescript' --exclude='node_modules/typescript' \
  --exclude='node_modules/playwright-core' --exclude='node_modules/core-js' --exclude='node_modules/@esbuild' --exclude='node_modules/esbuild' \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/darwin' --exclude='node_modules/onnxruntime-node/bin/napi-v6/win32' \
  --exclude='node_modules/onnxruntime-node/bin/napi-v6/linux/arm64' --exclude='node_modules/@types' --exclude='node_modules/zod/src' \
  --exclude='node_modules/protobufjs/cli' --exclude='node_modules/webgpu/dist/win32-*' --exclude='node_modules/webgpu/dist/darwin-*' \
  --exclude='node_modules/webgpu/dist/linux-arm64' --exclude='*.map' --exclude='*.d.ts' --exclude='*.md' \
  dist node_modules models data package.json $( [ -d scripts/configs ] && echo scripts/configs ) ${DEVICE_EXTRA:-} | tar -xf - -C "$stage"
# TensorFlow.js packages: only each package.json and its Node entry file (the rest is browser bundles).
if [ -d node_modules/@tensorflow ]; then
  for p in node_modules/@tensorflow/*; do
    main=$(node -p "require('./$p/package.json').main || ''"); [ -n "$main" ] || continue
    mkdir -p "$stage/$p/$(dirname "$main")"; cp "$p/package.json" "$stage/$p/"; cp "$p/$main" "$stage/$p/$main" 2>/dev/null || true
    [ -d "$p/node_modules" ] && cp -r "$p/node_modules" "$stage/$p/"
  done
  [ -d node_modules/@tensorflow/tfjs-backend-wasm/wasm-out ] && cp -r node_modules/@tensorflow/tfjs-backend-wasm/wasm-out "$stage/node_modules/@tensorflow/tfjs-backend-wasm/"
fi
tar -C "$stage" -cf - . | xz -T0 -6 > .device/app.tar.xz
rm -rf "$stage"
cat > .device/unpack.sh <<'UNPACK'
#!/usr/bin/env bash
# Device side: node on the PATH, the Vulkan loader, the app under /opt/app.
set -e
here=$(cd "$(dirname "$0")" && pwd)
xz -dc "$here/node.xz" > /usr/local/bin/node && chmod +x /usr/local/bin/node
for f in "$here"/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done; ldconfig
mkdir -p /opt/app && tar -xJf "$here/app.tar.xz" -C /opt/app
echo "node $(node --version) | $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null) | app in /opt/app"
UNPACK
chmod +x .device/unpack.sh
total=$(( $(git ls-files -z | xargs -0 stat -c %s | awk '{s+=$1} END {print s}') + $(du -cb .device | tail -1 | cut -f1) ))
echo "packed .device/: $(du -sh .device | cut -f1); with the tracked tree about $((total / 1048576)) MiB of the 64 MiB a run may carry"
