// The tools' names for the workspace's one seeded generator (libs/hashing): harness code and test
// data keep calling `rng` / `gauss`, with the same streams as before.
export { normalDeviate as gauss, seededRandom as rng } from '@defender/hashing';
