/**
 * @file onnxruntime-node as dmlkit loads it: every module of dmlkit imports onnxruntime from here, so
 * that onnxruntime's telemetry is off before the first session exists.
 *
 * onnxruntime-node 1.30 records usage telemetry by default: a device id and a SQLite event queue
 * (`onnxruntime.db`, megabytes after ordinary runs) under `~/.cache/Microsoft/DeveloperTools/.onnxruntime/`.
 * libonnxruntime reads the environment variable `ORT_DISABLE_TELEMETRY`. dmlkit sets it to `1`
 * unless the user set it (`ORT_DISABLE_TELEMETRY=0` turns telemetry back on), in telemetry-off.ts,
 * imported first, so that the variable is set before libonnxruntime is even loaded. libonnxruntime also
 * records nothing when the `CI` environment variable is set (measured: with `CI=true` even
 * `ORT_DISABLE_TELEMETRY=0` wrote no folder).
 */
import './telemetry-off.js';
import * as ort from 'onnxruntime-node';

export default ort;
export * from 'onnxruntime-node';
