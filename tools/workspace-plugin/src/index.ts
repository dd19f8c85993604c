export { libGenerator } from './generators/lib/generator';
export type { LibGeneratorSchema } from './generators/lib/schema';
