#!/usr/bin/env bash
# The graph trainer on a GPU machine, in one run (the default parts' time limits add up to 18 minutes; about
# 8 when all goes well: each part has a time limit, each benchmark row 50-60 s). Where one command may run
# 10 minutes at most, run the default parts in two calls (the machine stays warm between them):
#   PARTS="device-check steps-webgpu steps-webgpu-micro parity-webgpu inference-webgpu normalization-webgpu" ...
#   PARTS="bench-recipe-r bench-resnet18 profile-webgpu" ...
# and, when time is left, PARTS="cpu-scaling eval-images-cpu" (the CPU's 16 cores against PyTorch's).
#   1. device-check: one step of each network's step graphs on onnxruntime's WebGPU provider against its
#      CPU provider, every output compared (scripts/tools/check-graph-trainer-device.ts);
#   2. steps-webgpu: five Adam steps of each network through GraphTrainer on WebGPU and on the CPU, every
#      weight, running statistic and the embeddings compared after each (scripts/tools/check-graph-trainer-steps.ts);
#      steps-webgpu-micro: the same, 3 steps in micro-batches of 8 (the gradient sums stay on the GPU);
#   3. parity-webgpu: the step-for-step check against PyTorch (spec/engine/graph-trainer/graph-trainer-parity.spec.ts)
#      with the step graphs on the WebGPU provider (DML_GRAPH_DEVICE=webgpu), the CPU's tolerances;
#   4. inference-webgpu: inference parity of the shipped and fixture models, WebGPU against CPU
#      (scripts/tools/check-webgpu-parity.ts);
#      normalization-webgpu: 4,000 generated JPEGs embedded on WebGPU with the batches normalised on the host
#      and on the device (uint8 crops in, the normalisation graph in front of the model), alternating 3 times:
#      the embeddings compared and each way's images/s and parent-process CPU per image
#      (scripts/bench/normalization-place.ts);
#   5. bench-recipe-r, bench-resnet18: scripts/bench/bench-train.ts on Recipe R's network (batch 128, 64 px) and
#      ResNet-18 (batch 64, 128 px): the graph trainer on the CPU and WebGPU providers, its loss in the step
#      graph (one run per step) and by TensorFlow.js between two runs, against PyTorch on the CPU and on
#      CUDA (float32, TF32 off), all on this one machine in this one run;
#   6. bench-resnet50 (only when PARTS names it; up to 5 minutes): ResNet-50 (batch 32, 224 px), the same
#      way, each row allowed 120 s (compiling its step graph and opening the sessions take most of it);
#   7. profile-webgpu (up to 4 minutes): where a step's time goes on WebGPU (scripts/bench/profile-graph-trainer.ts
#      --profile): kernel time by operator type, the 20 slowest nodes, the nodes that fell back to the CPU
#      provider and the device <-> host copies inside each run, for Recipe R's network (batch 128, 64 px) and
#      ResNet-18 (batch 64, 128 px); the same on the CPU provider beside it;
#   8. memory-resnet50 (only when PARTS names it; up to 5 minutes): the memory of a ResNet-50 step at 224 px on
#      WebGPU (scripts/bench/step-memory.ts: batches 16 and 32 whole, batch 64 in micro-batches of 16), the
#      GPU's memory in use sampled by nvidia-smi every 0.2 s (the largest sample per row in memory-gpu.txt).
#   9. eval-resnet50 (only when PARTS names it; up to 6 minutes): `dml eval` of 10,000 generated 256x256 JPEGs in
#      100 classes with torchvision's ResNet-50 (seeded, 128-d head) on WebGPU (normalised on the host, the
#      default, then on the device), against PyTorch's same evaluation
#      on CUDA (DataLoader with 16 workers, exact search on the GPU, k-means by faiss or scikit-learn:
#      scripts/reference/torch_eval_pipeline.py), each timed end to end, with their R@1 and MAP@R side by side.
#  10. cpu-scaling (only when PARTS names it; up to 5 minutes; issue 43 item 2, the 16-core half): the graph
#      trainer's kernels per operator at 2, 4, 8 and 16 intra-op threads with the speed-up of each operator type
#      (scripts/bench/profile-graph-trainer.ts --threads 2,4,8,16: the operators whose time does not fall run
#      on one thread), then Recipe R's fused step against PyTorch's CPU step with 2 and with 16 threads each
#      (bench-train.ts --threads), and with 16 without the blocked convolutions (--plain-convolutions);
#  11. eval-images-cpu (only when PARTS names it; up to 5 minutes; issue 43 item 1 on 16 cores):
#      scripts/bench/bench-eval.ts --mode images on 4,000 generated JPEGs with one decode process per core,
#      against PyTorch's DataLoader with as many workers, on the CPU (the cheap embedder).
# The machine has no Node.js: pack it here first (`npm ci && bash scripts/gpu/pack.sh`: node, the Vulkan
# loader and the built app in .device/), then on the GPU machine, from the repository root:
#   bash .device/unpack.sh && bash scripts/gpu/graph-trainer-gpu.sh "$OUT"
# PARTS (default: all of the above) picks parts by name; APP (default /opt/app) is where the built app was
# unpacked; PYTHON (default: python3 on the PATH) must have torch and torchvision. Each part's log is
# written to the output folder (first argument, default ./gpu-out); a part that fails is reported and the
# next one runs.
set -uo pipefail
repo=$(pwd)
out=$(mkdir -p "${1:-gpu-out}" && cd "${1:-gpu-out}" && pwd)
app=${APP:-/opt/app}
export DML_PYTHON=${PYTHON:-$(command -v python3)}
mkdir -p "$app/dist/scripts" "$app/dist/spec/fixtures"
cp -r "$repo/scripts/reference" "$app/dist/scripts/"
ln -sfn "$repo/spec/fixtures/graph-trainer" "$app/dist/spec/fixtures/graph-trainer"
cd "$app" || exit 1
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; node --version; "$DML_PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'; } 2>&1 | tee "$out/machine.txt"
status=0
parts=${PARTS:-device-check steps-webgpu steps-webgpu-micro parity-webgpu inference-webgpu normalization-webgpu bench-recipe-r bench-resnet18 profile-webgpu}
part() { # name, time limit (s), command...
  local name=$1 limit=$2; shift 2
  [[ " $parts " == *" $name "* ]] || return 0
  echo "== $name" | tee -a "$out/summary.txt"
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1; local rc=$?
  tail -n 60 "$out/$name.txt"
  echo "== $name: exit $rc" | tee -a "$out/summary.txt"
  [ "$rc" -eq 0 ] || status=1
}
fixtures=("$repo"/spec/fixtures/graph-trainer/*/initial.onnx)
part device-check 60 node dist/scripts/tools/check-graph-trainer-device.js --device webgpu --batch 32 recipe-r "${fixtures[@]}"
part steps-webgpu 90 node dist/scripts/tools/check-graph-trainer-steps.js --device webgpu --steps 5 --batch 32 recipe-r "${fixtures[@]}"
part steps-webgpu-micro 90 node dist/scripts/tools/check-graph-trainer-steps.js --device webgpu --steps 3 --batch 32 --micro-batch 8 recipe-r "${fixtures[@]}"
part parity-webgpu 120 env DML_GRAPH_DEVICE=webgpu node node_modules/mocha/bin/mocha.js --no-config --timeout 100000 dist/spec/engine/graph-trainer/graph-trainer-parity.spec.js
part inference-webgpu 45 node dist/scripts/tools/check-webgpu-parity.js "${fixtures[@]}"
part normalization-webgpu 90 node --single-threaded-gc dist/scripts/bench/normalization-place.js --device webgpu --images 4000 --rounds 3
bench=(node --single-threaded-gc dist/scripts/bench/bench-train.js --backends onnx --devices cpu,webgpu --torch-devices cpu,cuda)
part bench-recipe-r 150 "${bench[@]}" --child-seconds 60 --warmup 2 --models recipe-r --batch 128 --convnet-steps 5
part bench-resnet18 200 "${bench[@]}" --child-seconds 50 --warmup 2 --models resnet18 --image-size 128 --batch 64 --convnet-steps 5
part bench-resnet50 290 "${bench[@]}" --child-seconds 120 --warmup 1 --models resnet50 --batch 32 --convnet-steps 2
profile_webgpu() { # each network's step profile on WebGPU, then on the CPU provider
  "$DML_PYTHON" "$repo/scripts/reference/export_torchvision.py" resnet18 128 "$out/resnet18-128.onnx" 128 > /dev/null || return 1
  for device in webgpu cpu; do
    mkdir -p "$out/profile-$device"
    node dist/scripts/bench/profile-graph-trainer.js --model recipe-r --batch 128 --size 64 --runs 3 --device "$device" --profile "$out/profile-$device" || return 1
    node dist/scripts/bench/profile-graph-trainer.js --model "$out/resnet18-128.onnx" --batch 64 --size 128 --runs 3 --device "$device" --profile "$out/profile-$device" || return 1
  done
}
memory() { # step-memory.ts arguments...: one run with nvidia-smi sampled beside it, the largest sample recorded
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$out/memory-samples.txt" & local sampler=$!
  node --single-threaded-gc dist/scripts/bench/step-memory.js "$out/resnet50-224.onnx" --device webgpu "$@"; local rc=$?
  kill "$sampler"
  echo "$* : largest GPU memory in use $(sort -n "$out/memory-samples.txt" | tail -n 1) MiB" | tee -a "$out/memory-gpu.txt"
  return $rc
}
memory_resnet50() {
  "$DML_PYTHON" "$repo/scripts/reference/export_torchvision.py" resnet50 224 "$out/resnet50-224.onnx" 128 > /dev/null || return 1
  memory --batches 16 && memory --batches 32 && memory --batches 64 --micro-batch 16 --steps 1
}
eval_resnet50() { # dml eval on WebGPU, then PyTorch's evaluation on CUDA, of the same images and network
  "$DML_PYTHON" "$repo/scripts/reference/torch_eval_pipeline.py" make-data "$out/eval-images" --classes 100 --per-class 100 --size 256 || return 1
  "$DML_PYTHON" "$repo/scripts/reference/export_torchvision.py" resnet50 224 "$out/resnet50-eval.onnx" 128 > /dev/null || return 1
  local start=$EPOCHREALTIME
  node --single-threaded-gc dist/bin/dml.js eval "$out/resnet50-eval.onnx" --data "folder:$out/eval-images" --device webgpu --out "$out/eval-webgpu" || return 1
  echo "dml eval (webgpu, normalised on the host): $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s wall"
  start=$EPOCHREALTIME
  node --single-threaded-gc dist/bin/dml.js eval "$out/resnet50-eval.onnx" --data "folder:$out/eval-images" --device webgpu --normalization device --out "$out/eval-webgpu-device" || return 1
  echo "dml eval (webgpu, normalised on the device): $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s wall"
  "$DML_PYTHON" "$repo/scripts/reference/torch_eval_pipeline.py" run "$out/eval-images" --arch resnet50 --dim 128 --device cuda --workers "$(nproc)"
}
cpu_scaling() { # the graph trainer's step on 2 to 16 threads, against PyTorch's with as many
  node dist/scripts/bench/profile-graph-trainer.js --model recipe-r --batch 128 --size 64 --runs 4 --threads 2,4,8,16 --profile "$out/profile-threads" || return 1
  for run in "2" "16" "16 --plain-convolutions"; do
    # shellcheck disable=SC2086 # "16 --plain-convolutions" is two words on purpose
    node --single-threaded-gc dist/scripts/bench/bench-train.js --backends onnx --devices cpu --graph-loss in-graph --torch-devices cpu \
      --threads $run --child-seconds 60 --warmup 2 --models recipe-r --batch 128 --convnet-steps 5 || return 1
  done
}
export -f memory memory_resnet50 profile_webgpu eval_resnet50 cpu_scaling; export out repo # `timeout` runs a command: the part runs them in a bash of its own
part profile-webgpu 240 bash -c profile_webgpu
part memory-resnet50 290 bash -c memory_resnet50
part eval-resnet50 360 bash -c eval_resnet50
part cpu-scaling 300 bash -c cpu_scaling
part eval-images-cpu 300 env BENCH_PYTHON="$DML_PYTHON" node dist/scripts/bench/bench-eval.js --mode images --images 4000 --device cpu
cat "$out/summary.txt"
exit $status
