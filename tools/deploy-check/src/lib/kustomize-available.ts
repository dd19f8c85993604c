import { banner, infraRequired } from '@defender/infra-harness';
import { findKustomizer, Kustomizer } from './kustomize';

let cached: Kustomizer | { unavailable: string } | undefined;

/** The kustomize of this machine, found once per test file. */
export function kustomizer(): Kustomizer | { unavailable: string } {
  cached ??= findKustomizer();
  return cached;
}

/**
 * `describe` for tests that render the kustomize overlays. Without a kustomize (kubectl) the block is
 * skipped with a loud banner, or fails under REQUIRE_INFRA=1 (CI), like the repo's server-backed tests.
 */
export function describeWithKustomize(name: string, fn: (k: Kustomizer) => void): void {
  const k = kustomizer();
  if (!('unavailable' in k)) {
    describe(name, () => fn(k));
    return;
  }
  if (infraRequired()) {
    describe(name, () => {
      it('has kustomize (kubectl) to render the manifests (REQUIRE_INFRA=1)', () => {
        throw new Error(`required tool missing: ${k.unavailable}`);
      });
    });
    return;
  }
  // Outside CI, a machine without kubectl skips these tests loudly (banner above) instead of failing;
  // the block still declares its tests, so Jest counts and lists every one of them as skipped. They
  // never run, so the placeholder kustomizer is never called.
  process.stderr.write(banner(`SKIPPED "${name}": ${k.unavailable}`));
  describe.skip(name, () => fn({ command: `(unavailable: ${k.unavailable})`, args: [], version: 'none' }));
}
