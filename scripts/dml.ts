#!/usr/bin/env node
/**
 * @file Entry point of the `dml` command (compiled to dist/scripts/dml.js, the package's `bin`).
 */
import { runCli } from '../lib/cli/program.js';

process.exitCode = await runCli(process.argv.slice(2));
