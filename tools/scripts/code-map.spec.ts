import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const REPO = join(__dirname, '..', '..');

/** The rows of docs/architecture.md's "Code map" table: lib name -> tag. */
function codeMap(): Map<string, string> {
  const doc = readFileSync(join(REPO, 'docs', 'architecture.md'), 'utf8');
  const start = doc.indexOf('\n## Code map\n');
  expect(start).toBeGreaterThanOrEqual(0);
  const next = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, next < 0 ? undefined : next);
  return new Map([...section.matchAll(/^\| `([a-z0-9-]+)` \| (type:[a-z]+) \|/gm)].map((m) => [m[1] as string, m[2] as string]));
}

describe('docs/architecture.md code map', () => {
  it('names every lib under libs/ once, with the tag of its project.json, and nothing else', () => {
    const libs = readdirSync(join(REPO, 'libs'))
      .filter((d) => existsSync(join(REPO, 'libs', d, 'project.json')))
      .sort();
    const tags = libs.map((d) => {
      const project = JSON.parse(readFileSync(join(REPO, 'libs', d, 'project.json'), 'utf8')) as { tags?: string[] };
      return [d, (project.tags ?? []).filter((t) => t.startsWith('type:')).join(',')];
    });
    expect([...codeMap().entries()].sort()).toEqual(tags);
  });
});
