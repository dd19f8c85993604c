import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO } from './repo';

/** A rendered Kubernetes object (only the fields every object has are typed). */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** How to run kustomize here: `kustomize build DIR` or `kubectl kustomize DIR`. */
export interface Kustomizer {
  readonly command: string;
  readonly args: readonly string[];
  readonly version: string;
}

function which(cmd: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/**
 * Finds a kustomize able to render components (kustomize >= 4, i.e. kubectl >= 1.21): a standalone
 * `kustomize`, else `kubectl kustomize`. Returns the reason when there is none.
 */
export function findKustomizer(): Kustomizer | { unavailable: string } {
  const kustomize = which('kustomize');
  if (kustomize) {
    const version = execFileSync(kustomize, ['version'], { encoding: 'utf8' }).trim();
    return check({ command: kustomize, args: ['build'], version });
  }
  const kubectl = which('kubectl');
  if (kubectl) {
    const out = execFileSync(kubectl, ['version', '--client'], { encoding: 'utf8' });
    const version = /Kustomize Version:\s*(\S+)/.exec(out)?.[1] ?? 'unknown';
    return check({ command: kubectl, args: ['kustomize'], version });
  }
  return { unavailable: 'neither kustomize nor kubectl is on PATH' };
}

function check(k: Kustomizer): Kustomizer | { unavailable: string } {
  const major = Number(/v?(\d+)\./.exec(k.version)?.[1] ?? '0');
  if (major < 4) return { unavailable: `${k.command} bundles kustomize ${k.version}; components need kustomize >= 4 (kubectl >= 1.21)` };
  return k;
}

/** Renders a kustomization directory (absolute, or relative to the workspace root) into objects. */
export function render(k: Kustomizer, dir: string): K8sObject[] {
  const abs = dir.startsWith('/') ? dir : join(REPO, dir);
  const r = spawnSync(k.command, [...k.args, abs], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`kustomize ${dir} failed (exit ${r.status}):\n${r.stderr}`);
  return parseManifests(r.stdout, dir);
}

/** Parses multi-document YAML; a YAML error names the source. */
export function parseManifests(text: string, source: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as K8sObject | null;
    if (value !== null) objects.push(value);
  }
  return objects;
}

/**
 * Renders a throw-away kustomization (in the OS temp directory) whose `resources` and `components`
 * are workspace-relative directories, e.g. the base plus an optional component.
 */
export function renderComposition(k: Kustomizer, spec: { namespace: string; resources: string[]; components: string[] }): K8sObject[] {
  const dir = mkdtempSync(join(tmpdir(), 'deploy-check-'));
  try {
    // kustomize accepts only relative paths to other kustomizations.
    const rel = (p: string) => relative(dir, join(REPO, p));
    const lines = [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      `namespace: ${spec.namespace}`,
      'resources:',
      ...spec.resources.map((r) => `  - ${rel(r)}`),
      'components:',
      ...spec.components.map((c) => `  - ${rel(c)}`),
    ];
    writeFileSync(join(dir, 'kustomization.yaml'), lines.join('\n') + '\n');
    return render(k, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `Kind/name` (and namespace) for messages. */
export function ref(o: K8sObject): string {
  return `${o.kind}/${o.metadata.name}${o.metadata.namespace ? ` (ns ${o.metadata.namespace})` : ''}`;
}
