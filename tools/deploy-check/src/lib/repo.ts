import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import * as ts from 'typescript';

/** Root of the workspace. */
export const REPO = join(__dirname, '..', '..', '..', '..');

/** Reads a file relative to the workspace root. */
export function readRepoFile(path: string): string {
  return readFileSync(join(REPO, path), 'utf8');
}

/** The parts of an app's project.json and webpack config the deployment relies on. */
export interface AppProject {
  /** Nx project name, also the directory under apps/, the image, the container and the Deployment name. */
  readonly name: string;
  readonly root: string;
  /** From its webpack.config.js (NxAppWebpackPlugin's options, webpack's output path), paths from the workspace root. */
  readonly build: {
    readonly outputPath: string;
    readonly generatePackageJson: boolean;
    readonly assets: readonly { glob: string; input: string; output: string }[];
  };
}

interface ProjectJson {
  name?: string;
  projectType?: string;
}

/**
 * The literal value of an expression of a webpack config: strings, numbers, booleans, arrays and
 * objects of them, and `join(__dirname, ...)` as a path from the workspace root; anything else
 * (a function call, a variable) is undefined.
 */
function literal(e: ts.Expression, root: string): unknown {
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return e.text;
  if (ts.isNumericLiteral(e)) return Number(e.text);
  if (e.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (e.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (ts.isArrayLiteralExpression(e)) return e.elements.map((x) => literal(x, root));
  if (ts.isObjectLiteralExpression(e)) {
    const o: Record<string, unknown> = {};
    for (const p of e.properties) if (ts.isPropertyAssignment(p) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) o[p.name.text] = literal(p.initializer, root);
    return o;
  }
  if (ts.isCallExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === 'join') {
    const [first, ...rest] = e.arguments;
    const parts = rest.map((a) => literal(a, root));
    if (first && ts.isIdentifier(first) && first.text === '__dirname' && parts.every((x) => typeof x === 'string')) return posix.join(root, ...(parts as string[]));
  }
  return undefined;
}

/** An app's webpack.config.js as written: the options of its NxAppWebpackPlugin and its `output`. */
function readWebpackConfig(root: string): { plugin: Record<string, unknown>; output: Record<string, unknown> } {
  const file = `${root}/webpack.config.js`;
  const source = ts.createSourceFile(file, existsSync(join(REPO, file)) ? readRepoFile(file) : '', ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const found = { plugin: {}, output: {} };
  const visit = (n: ts.Node): void => {
    if (ts.isNewExpression(n) && n.expression.getText(source) === 'NxAppWebpackPlugin' && n.arguments?.[0]) {
      found.plugin = literal(n.arguments[0], root) as Record<string, unknown>;
    } else if (ts.isPropertyAssignment(n) && n.name.getText(source) === 'output' && ts.isObjectLiteralExpression(n.initializer)) {
      found.output = literal(n.initializer, root) as Record<string, unknown>;
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

/** Every application under apps/ (from its project.json and webpack config), sorted by name. */
export function listApps(): AppProject[] {
  const apps: AppProject[] = [];
  for (const dir of readdirSync(join(REPO, 'apps')).sort()) {
    const file = join(REPO, 'apps', dir, 'project.json');
    if (!existsSync(file)) continue;
    const p = JSON.parse(readFileSync(file, 'utf8')) as ProjectJson;
    if (p.projectType !== 'application') continue;
    const root = `apps/${dir}`;
    const { plugin, output } = readWebpackConfig(root);
    apps.push({
      name: p.name ?? dir,
      root,
      build: {
        outputPath: typeof output['path'] === 'string' ? output['path'] : '',
        generatePackageJson: plugin['generatePackageJson'] === true,
        assets: (Array.isArray(plugin['assets']) ? plugin['assets'] : []).filter(
          (a): a is { glob: string; input: string; output: string } => typeof a === 'object' && a !== null && typeof a.input === 'string',
        ),
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
