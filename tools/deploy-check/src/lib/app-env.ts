import { join } from 'node:path';
import { listApps, REPO } from './repo';

/** What an app reads from its environment, taken from its exported zod schema. */
export interface AppEnvSpec {
  readonly app: string;
  /** The exported schema (a zod object), for validating a deployment's values the way the app does. */
  readonly schema: EnvSchema;
  /** Every variable the app reads. */
  readonly keys: ReadonlySet<string>;
  /** Variables without a default that must be set. */
  readonly required: ReadonlySet<string>;
  /** Defaults of the variables that have one (after parsing: numbers, arrays, ...). */
  readonly defaults: ReadonlyMap<string, unknown>;
}

/** The part of a zod object schema used here. */
export interface EnvSchema {
  readonly shape: Record<string, { safeParse(v: unknown): { success: boolean; data?: unknown } }>;
}

function isEnvSchema(v: unknown): v is EnvSchema {
  return typeof v === 'object' && v !== null && 'shape' in v && typeof (v as { shape: unknown }).shape === 'object' && 'safeParse' in v;
}

/**
 * Loads `apps/<app>/src/app/config.ts` of every app and returns what its environment schema reads.
 * The schema is the module's one export named `*EnvSchema` (a zod object; zod 4 keeps `.shape` on
 * refined objects). Loaded by computed path, so a new app is covered without changing this file.
 *
 * @throws Error when an app has no such module or not exactly one such export.
 */
export function loadAppEnvSpecs(): AppEnvSpec[] {
  return listApps().map((app) => {
    const file = join(REPO, app.root, 'src', 'app', 'config.ts');
    // A computed path: one module per app, whatever apps exist.
    const mod = require(file) as Record<string, unknown>;
    const found = Object.entries(mod).filter(([name, v]) => name.endsWith('EnvSchema') && isEnvSchema(v));
    const only = found[0];
    if (found.length !== 1 || !only) {
      throw new Error(`${app.root}/src/app/config.ts must export exactly one *EnvSchema zod object (found ${found.map(([n]) => n).join(', ') || 'none'})`);
    }
    const schema = only[1] as EnvSchema;
    const keys = new Set(Object.keys(schema.shape));
    const required = new Set<string>();
    const defaults = new Map<string, unknown>();
    for (const [key, field] of Object.entries(schema.shape)) {
      const r = field.safeParse(undefined);
      if (!r.success) required.add(key);
      else if (r.data !== undefined) defaults.set(key, r.data);
    }
    return { app: app.name, schema, keys, required, defaults };
  });
}
