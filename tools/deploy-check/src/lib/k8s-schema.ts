import { dirname, join } from 'node:path';
import ts from 'typescript';
import { K8sObject, ref } from './kustomize';
import { REPO } from './repo';

/**
 * Kubernetes schema validation without a cluster: `kubectl apply --dry-run=client --validate` needs
 * an API server for the OpenAPI document, so the schemas come from npm instead.
 *
 * - `kubernetes-models` (Kubernetes OpenAPI compiled to JSON-schema validators) and
 *   `@kubernetes-models/prometheus-operator` (the operator's CRDs): types, formats, enums, required
 *   fields, patterns.
 * - The same packages' TypeScript interfaces: each object is type-checked as an object literal, whose
 *   excess-property check rejects unknown fields (a misspelt `livenessprobe` would otherwise be
 *   dropped silently by the API server's pruning, like `kubectl --validate=strict` would report).
 */

/** Module of the model for an apiVersion/kind, or undefined when no schema is known. */
export function modelModule(apiVersion: string, kind: string): string | undefined {
  if (apiVersion.startsWith('monitoring.coreos.com/')) return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  // Core group objects live under kubernetes-models/v1, the others under <group>/<version>.
  const path = `kubernetes-models/${apiVersion}/${kind}`;
  try {
    require.resolve(path);
    return path;
  } catch {
    return undefined;
  }
}

interface ModelClass {
  new (data: unknown): { validate(): void };
}

/** Validates each object against its JSON schema; returns one message per invalid or unknown object. */
export function validateSchemas(objects: readonly K8sObject[], source: string): string[] {
  const problems: string[] = [];
  for (const o of objects) {
    const mod = modelModule(o.apiVersion, o.kind);
    if (!mod) {
      problems.push(`${source}: ${ref(o)}: no schema for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    // The model module is chosen by apiVersion/kind.
    const Model = (require(mod) as Record<string, ModelClass>)[o.kind];
    if (!Model) {
      problems.push(`${source}: ${ref(o)}: ${mod} exports no ${o.kind}`);
      continue;
    }
    try {
      new Model(o).validate();
    } catch (err) {
      problems.push(`${source}: ${ref(o)}: ${(err as Error).message}`);
    }
  }
  return problems;
}

/**
 * Type-checks every object as a literal of its model's interface (`I<Kind>`); reports unknown fields
 * and type mismatches with the object they are in. One TypeScript program for all sources.
 */
export function checkKnownFields(sources: ReadonlyMap<string, readonly K8sObject[]>): string[] {
  const problems: string[] = [];
  const lines: string[] = [];
  const owners: { from: number; to: number; what: string }[] = [];
  const imports = new Map<string, string>();
  for (const [source, objects] of sources) {
    for (const o of objects) {
      const mod = modelModule(o.apiVersion, o.kind);
      if (!mod) continue; // reported by validateSchemas
      let alias = imports.get(mod);
      if (!alias) {
        alias = `T${imports.size}`;
        imports.set(mod, alias);
      }
      const body = JSON.stringify(o, null, 2).split('\n');
      owners.push({ from: lines.length, to: lines.length + body.length, what: `${source}: ${ref(o)}` });
      lines.push(`export const o${owners.length}: ${alias} = ${body[0]}`, ...body.slice(1));
    }
  }
  const header = [...imports].map(([mod, alias]) => `import type { I${mod.split('/').pop()} as ${alias} } from '${mod}';`);
  const text = [...header, ...lines].join('\n') + '\n';
  const offset = header.length;

  // A virtual file inside the workspace, so module resolution finds the workspace's node_modules.
  const fileName = join(REPO, 'tools', 'deploy-check', '__rendered-manifests__.ts');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    skipLibCheck: true,
    types: [],
    noErrorTruncation: true,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, onError, create) =>
    name === fileName ? ts.createSourceFile(name, text, lang, true) : getSourceFile(name, lang, onError, create);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === fileName || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (name === fileName ? text : readFile(name));
  host.getCurrentDirectory = () => dirname(fileName);

  const program = ts.createProgram([fileName], options, host);
  for (const d of ts.getPreEmitDiagnostics(program, program.getSourceFile(fileName))) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (d.file?.fileName !== fileName || d.start === undefined) {
      problems.push(`type check: ${message}`);
      continue;
    }
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    const owner = owners.find((o) => line - offset >= o.from && line - offset < o.to);
    const fieldLine = text.split('\n')[line]?.trim() ?? '';
    problems.push(`${owner?.what ?? 'manifest'}: ${message.split('\n').pop()} (at ${fieldLine})`);
  }
  return problems;
}
