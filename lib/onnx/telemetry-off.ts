/**
 * @file Turns onnxruntime's telemetry off (see ort.ts) by setting `ORT_DISABLE_TELEMETRY=1` unless the
 * user set it. A module of its own so that ort.ts can import it before onnxruntime-node: ES modules
 * run their imports in order, so the variable is in the environment before libonnxruntime loads.
 */
process.env['ORT_DISABLE_TELEMETRY'] ??= '1';
