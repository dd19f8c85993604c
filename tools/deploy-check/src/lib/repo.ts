import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Root of the workspace. */
export const REPO = join(__dirname, '..', '..', '..', '..');

/** Reads a file relative to the workspace root. */
export function readRepoFile(path: string): string {
  return readFileSync(join(REPO, path), 'utf8');
}

/** The parts of an app's project.json the deployment relies on. */
export interface AppProject {
  /** Nx project name, also the directory under apps/, the image, the container and the Deployment name. */
  readonly name: string;
  readonly root: string;
  readonly build: {
    readonly outputPath: string;
    readonly generatePackageJson: boolean;
    readonly assets: readonly { glob: string; input: string; output: string }[];
  };
}

interface ProjectJson {
  name?: string;
  projectType?: string;
  targets?: { build?: { options?: { outputPath?: string; generatePackageJson?: boolean; assets?: unknown[] } } };
}

/** Every application under apps/ (from its project.json), sorted by name. */
export function listApps(): AppProject[] {
  const apps: AppProject[] = [];
  for (const dir of readdirSync(join(REPO, 'apps')).sort()) {
    const file = join(REPO, 'apps', dir, 'project.json');
    if (!existsSync(file)) continue;
    const p = JSON.parse(readFileSync(file, 'utf8')) as ProjectJson;
    if (p.projectType !== 'application') continue;
    const o = p.targets?.build?.options ?? {};
    apps.push({
      name: p.name ?? dir,
      root: `apps/${dir}`,
      build: {
        outputPath: o.outputPath ?? '',
        generatePackageJson: o.generatePackageJson === true,
        assets: (o.assets ?? []).filter((a): a is { glob: string; input: string; output: string } => typeof a === 'object' && a !== null),
      },
    });
  }
  return apps;
}

/** Source files (.ts, no specs) under the given workspace-relative directories. */
export function listSourceFiles(dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    const abs = join(REPO, rel);
    if (!existsSync(abs)) return;
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'testing') walk(child);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && !entry.name.endsWith('.d.ts')) {
        out.push(child);
      }
    }
  };
  dirs.forEach(walk);
  return out.sort();
}
