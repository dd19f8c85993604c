// One preset of bench:detection in a worker thread: the scenario is rebuilt from the same options
// (deterministic), the preset run, and its result posted back (the benchmark runs presets in parallel,
// one per core).
import { parentPort, workerData } from 'node:worker_threads';
import { buildScenario, runPreset, type DetectionBenchOptions } from './simulate';

interface Job {
  readonly options: DetectionBenchOptions;
  readonly preset: { readonly name: string; readonly document: unknown };
}

const job = workerData as Job;
const started = performance.now();
const result = runPreset(buildScenario(job.options), job.preset);
parentPort?.postMessage({ result, seconds: (performance.now() - started) / 1000 });
