/**
 * @file onnxruntime-node as dmlkit loads it: every module of dmlkit imports onnxruntime from here, so
 * that onnxruntime's telemetry is off before the first session exists.
 *
 * onnxruntime-node 1.30 records usage telemetry by default: a device id and a SQLite event queue
 * (`onnxruntime.db`, megabytes after ordinary runs) under `~/.cache/Microsoft/DeveloperTools/.onnxruntime/`.
 * libonnxruntime reads the environment variable `ORT_DISABLE_TELEMETRY` when it creates its
 * environment, at the first session (measured: set after loading the package and before the first
 * session, no folder is written; without it, the folder appears). dmlkit sets it to `1` unless the
 * user set it: `ORT_DISABLE_TELEMETRY=0` turns telemetry back on.
 */
import * as ort from 'onnxruntime-node';

process.env['ORT_DISABLE_TELEMETRY'] ??= '1';

export default ort;
export * from 'onnxruntime-node';
