// The simulator's building blocks for other tools (e.g. the whole-fab replay benchmark in tools/bench):
// the fab generator, the trace synthesizer, the run schedule and ids, chamber seeding.
export * from './lib/fab';
export * from './lib/rng';
export * from './lib/trace';
export { runIdOf, runIndexOf, schedule, seedChambers } from './lib/simulator';
