#!/usr/bin/env -S node --single-threaded-gc
/**
 * @file Entry point of the `dml` command (compiled to dist/bin/dml.js, the package's `bin`).
 *
 * Node runs it with `--single-threaded-gc`: V8 then collects garbage on the main thread only, instead
 * of marking and sweeping on background threads that compete with onnxruntime's threads for the cores
 * while the ort-cpu backend trains (a convnet step allocates some 300 MB of arrays, so V8 collects
 * several times per step). Measured with scripts/bench/bench-train.ts on 2 cores: convnet step 260-283 ->
 * 217-241 ms, small CNN 114-119 -> 99-111 ms (three runs each, alternating).
 */
import { runCli } from '../lib/cli/program.js';

process.exitCode = await runCli(process.argv.slice(2));
