import { DockerfileParser, From, Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';

/**
 * Lints an app's Dockerfile: the syntax and semantic checks of dockerfile-utils (the Docker
 * language server's validator), a few general hadolint-style rules, and the rules this project's
 * images follow (see apps/defender/Dockerfile). Each problem names the line (1-based) and the rule.
 */

export interface DockerfileFacts {
  /** The app (apps/<app>) the image runs. */
  readonly app: string;
  /** Its Nx build's outputPath (dist/apps/<app>). */
  readonly outputPath: string;
  /** The app's default HTTP_PORT and, for a gRPC server, GRPC_PORT. */
  readonly ports: readonly number[];
  readonly httpPort: number;
  /** Node majors the workspace supports (package.json engines), e.g. [20, 22, 24]. */
  readonly nodeMajors: (major: number) => boolean;
}

interface Stage {
  readonly from: From;
  readonly name: string | undefined;
  readonly instructions: Instruction[];
}

function stages(instructions: Instruction[]): Stage[] {
  const out: Stage[] = [];
  for (const i of instructions) {
    if (i instanceof From) out.push({ from: i, name: i.getBuildStage() ?? undefined, instructions: [] });
    else out[out.length - 1]?.instructions.push(i);
  }
  return out;
}

const line = (i: Instruction) => i.getRange().start.line + 1;

/** The JSON array of an exec-form instruction (CMD/ENTRYPOINT/HEALTHCHECK CMD), or undefined for shell form. */
function execForm(text: string): string[] | undefined {
  const t = text.trim();
  if (!t.startsWith('[')) return undefined;
  try {
    const v = JSON.parse(t) as unknown;
    return Array.isArray(v) && v.every((s) => typeof s === 'string') ? (v as string[]) : undefined;
  } catch {
    return undefined;
  }
}

function flag(i: Instruction, name: string): string | undefined {
  const m = new RegExp(`--${name}=(\\S+)`).exec(i.toString());
  return m?.[1];
}

/** Lints `text` (a Dockerfile) against the facts of the app it builds. */
export function lintDockerfile(text: string, facts: DockerfileFacts): string[] {
  const problems: string[] = [];
  const report = (at: number | Instruction, rule: string, message: string) => problems.push(`line ${typeof at === 'number' ? at : line(at)}: ${rule} ${message}`);

  for (const d of validate(text)) report(d.range.start.line + 1, `DU${String(d.code ?? '')}`, typeof d.message === 'string' ? d.message : d.message.value);

  const df = DockerfileParser.parse(text);
  const all = df.getInstructions();
  const st = stages(all);
  if (st.length < 2) report(1, 'DC001', 'must be multi-stage (build, production dependencies, runtime)');
  const runtime = st[st.length - 1];
  const first = st[0];
  if (!runtime || !first) return problems;
  const builders = st.slice(0, -1);
  for (const s of builders) if (!s.name) report(s.from, 'DC001', 'name every build stage (FROM ... AS <name>)');

  // Base images: one NODE_VERSION for every stage, Debian bookworm everywhere, slim at run time.
  const nodeArg = df.getARGs().find((a) => a.getProperty()?.getName() === 'NODE_VERSION');
  const firstFrom = first.from;
  if (!nodeArg || line(nodeArg) > line(firstFrom)) report(firstFrom, 'DC002', 'declare ARG NODE_VERSION before the first FROM, so every stage uses one Node version');
  const major = Number(nodeArg?.getProperty()?.getValue() ?? NaN);
  if (nodeArg && !(Number.isInteger(major) && facts.nodeMajors(major))) {
    report(nodeArg, 'DC002', `NODE_VERSION default "${nodeArg.getProperty()?.getValue() ?? ''}" is not a Node major the workspace supports (package.json engines)`);
  }
  for (const s of st) {
    const image = s.from.getImage() ?? '';
    if (/:latest$/.test(image) || !image.includes(':')) report(s.from, 'DL3007', `pin the base image tag (${image})`);
    const want = s === runtime ? 'node:${NODE_VERSION}-bookworm-slim' : 'node:${NODE_VERSION}-bookworm';
    if (image !== want) report(s.from, 'DC002', `${s === runtime ? 'runtime' : 'build'} stage should be FROM ${want} (same Debian and Node ABI as the native addons), is ${image}`);
  }

  // Build: this app only, with Nx.
  const runs = (s: Stage) => s.instructions.filter((i) => i.getKeyword() === 'RUN');
  const buildRuns = builders.flatMap(runs).filter((i) => /\bnx\s+(build|run-many|affected|run)\b/.test(i.getArgumentsContent() ?? ''));
  const ownBuild = new RegExp(`\\bnx\\s+build\\s+${facts.app}(\\s|$)`);
  if (!buildRuns.some((i) => ownBuild.test(i.getArgumentsContent() ?? ''))) report(1, 'DC003', `no build stage runs \`nx build ${facts.app}\``);
  for (const i of buildRuns) {
    const args = i.getArgumentsContent() ?? '';
    if (/\bnx\s+(run-many|affected)\b/.test(args) || [...args.matchAll(/\bnx\s+build\s+(\S+)/g)].some((m) => m[1] !== facts.app)) {
      report(i, 'DC003', `build only ${facts.app}`);
    }
  }

  // Production dependencies from the generated package.json + lock, in a builder stage.
  const out = facts.outputPath.replace(/\/$/, '');
  const depsStage = builders.find((s) => runs(s).some((i) => /\bnpm\s+(ci|install)\b.*--omit=dev/.test(i.getArgumentsContent() ?? '')));
  if (!depsStage) report(1, 'DC004', 'install production dependencies with `npm ci --omit=dev` in a build stage');
  else {
    const copies = depsStage.instructions.filter((i) => i.getKeyword() === 'COPY').map((i) => i.getArgumentsContent() ?? '');
    for (const f of ['package.json', 'package-lock.json']) {
      if (!copies.some((c) => c.includes(`${out}/${f}`))) report(depsStage.from, 'DC004', `the dependencies stage must copy ${out}/${f} (the generated manifest and lock)`);
    }
  }

  // Runtime: the bundle and node_modules from earlier stages; no package manager, no compiler.
  const rtCopies = runtime.instructions.filter((i) => i.getKeyword() === 'COPY');
  if (!rtCopies.some((i) => /--from=/.test(i.toString()) && (i.getArgumentsContent() ?? '').includes(`${out}/`))) report(runtime.from, 'DC005', `copy the bundle (${out}/) from the build stage`);
  if (!rtCopies.some((i) => /--from=/.test(i.toString()) && /node_modules/.test(i.getArgumentsContent() ?? ''))) report(runtime.from, 'DC005', 'copy node_modules from the dependencies stage');
  for (const i of runs(runtime)) {
    if (/\b(npm|yarn|pnpm)\s+(ci|install|i|add)\b/.test(i.getArgumentsContent() ?? '')) report(i, 'DC005', 'no package installs in the runtime stage');
  }
  const env = runtime.instructions.filter((i) => i.getKeyword() === 'ENV').map((i) => i.getArgumentsContent() ?? '');
  if (!env.some((e) => /\bNODE_ENV=production\b/.test(e))) report(runtime.from, 'DC011', 'set ENV NODE_ENV=production in the runtime stage');

  // Non-root, health check, signals, ports.
  const users = runtime.instructions.filter((i) => i.getKeyword() === 'USER');
  const user = users[users.length - 1];
  if (!user) report(runtime.from, 'DC006', 'the runtime stage must switch to a non-root USER');
  else {
    const u = (user.getArgumentsContent() ?? '').trim();
    if (/^(root|0)(:|$)/.test(u)) report(user, 'DC006', 'USER must not be root');
    else if (!/^\d+(:\d+)?$/.test(u)) report(user, 'DC006', `USER ${u}: use the numeric uid[:gid], so Kubernetes' runAsNonRoot can verify it`);
  }

  const hc = runtime.instructions.find((i) => i.getKeyword() === 'HEALTHCHECK');
  if (!hc) report(runtime.from, 'DC007', 'add a HEALTHCHECK (node, /health/live: the slim image has no curl)');
  else {
    const content = hc.getArgumentsContent() ?? '';
    const cmd = execForm(content.replace(/^.*?\bCMD\s+/s, ''));
    if (!cmd || cmd[0] !== 'node') report(hc, 'DC007', 'HEALTHCHECK CMD must be exec form running node');
    if (!content.includes('/health/live')) report(hc, 'DC007', 'HEALTHCHECK must ask /health/live');
    const port = /HTTP_PORT\s*\|\|\s*(\d+)/.exec(content)?.[1];
    if (Number(port) !== facts.httpPort) report(hc, 'DC007', `HEALTHCHECK falls back to port ${port ?? '(none)'}, the app's HTTP_PORT default is ${facts.httpPort}`);
    for (const f of ['interval', 'timeout', 'start-period', 'retries']) if (!flag(hc, f)) report(hc, 'DC007', `HEALTHCHECK without --${f}`);
  }

  const stop = runtime.instructions.find((i) => i.getKeyword() === 'STOPSIGNAL');
  if ((stop?.getArgumentsContent() ?? '').trim() !== 'SIGTERM') report(stop ?? runtime.from, 'DC008', 'STOPSIGNAL SIGTERM (the apps drain on SIGTERM)');

  const entry = runtime.instructions.filter((i) => i.getKeyword() === 'ENTRYPOINT').pop();
  const cmdI = runtime.instructions.filter((i) => i.getKeyword() === 'CMD').pop();
  const entryForm = entry ? execForm(entry.getArgumentsContent() ?? '') : undefined;
  const cmdForm = cmdI ? execForm(cmdI.getArgumentsContent() ?? '') : undefined;
  if (entry && !entryForm) report(entry, 'DC009', 'ENTRYPOINT in exec form, or SIGTERM goes to a shell, not node');
  if (!cmdI) report(runtime.from, 'DC009', 'no CMD');
  else if (!cmdForm) report(cmdI, 'DC009', 'CMD in exec form, or SIGTERM goes to a shell, not node');
  const argv = [...(entryForm ?? []), ...(cmdForm ?? [])];
  const init = argv[0] && /(^|\/)(tini|dumb-init|docker-init)$/.test(argv[0]);
  const nodeAt = init ? argv.findIndex((a, i) => i > 0 && a !== '--' && !a.startsWith('-')) : 0;
  const pid1 = cmdI ?? entry;
  if (pid1 && argv[nodeAt] !== 'node') report(pid1, 'DC009', `PID 1 must be node (or an init that forwards signals to it), is ${argv[0]}`);

  const exposed = runtime.instructions
    .filter((i) => i.getKeyword() === 'EXPOSE')
    .flatMap((i) => (i.getArgumentsContent() ?? '').split(/\s+/).filter(Boolean))
    .map((p) => Number(p.split('/')[0]))
    .sort((a, b) => a - b);
  const wanted = [...facts.ports].sort((a, b) => a - b);
  if (JSON.stringify(exposed) !== JSON.stringify(wanted)) report(runtime.from, 'DC010', `EXPOSE ${exposed.join(' ') || '(none)'}, the app listens on ${wanted.join(' ')} by default`);

  // General hygiene (hadolint's DL rules of the same spirit).
  const shellPipefail = all.some((i) => i.getKeyword() === 'SHELL' && /pipefail/.test(i.getArgumentsContent() ?? ''));
  for (const i of all) {
    const kw = i.getKeyword();
    const args = i.getArgumentsContent() ?? '';
    if (kw === 'ADD') report(i, 'DL3020', 'use COPY (ADD fetches URLs and unpacks archives)');
    if (kw === 'MAINTAINER') report(i, 'DL4000', 'MAINTAINER is deprecated');
    if (kw !== 'RUN') continue;
    if (/\bsudo\b/.test(args)) report(i, 'DL3004', 'no sudo');
    if (/(^|&&|;)\s*cd\s/.test(args)) report(i, 'DL3003', 'use WORKDIR instead of cd');
    if (/\b(curl|wget)\b[^|]*\|\s*(ba|z)?sh\b/.test(args)) report(i, 'DC012', 'do not pipe downloads into a shell');
    if (/\bapt-get\s+install\b/.test(args)) {
      if (!/--no-install-recommends/.test(args)) report(i, 'DL3015', 'apt-get install --no-install-recommends');
      if (!/rm -rf \/var\/lib\/apt\/lists/.test(args)) report(i, 'DL3009', 'remove /var/lib/apt/lists in the same RUN');
    }
    if (/[^|]\|[^|]/.test(args.replace(/"[^"]*"|'[^']*'/g, '')) && !shellPipefail) report(i, 'DL4006', 'set SHELL ["/bin/bash", "-o", "pipefail", "-c"] before a RUN with a pipe');
  }
  return problems;
}

/**
 * Docker's .dockerignore matching, enough for these files: `**` spans directories, `*` and `?`
 * stay within one, `!` re-includes; a pattern matching a directory excludes what is under it.
 */
export function dockerIgnored(patterns: readonly string[], path: string): boolean {
  const rules = patterns
    .map((p) => p.trim())
    .filter((p) => p.length > 0 && !p.startsWith('#'))
    .map((p) => {
      const negate = p.startsWith('!');
      const glob = (negate ? p.slice(1) : p).replace(/^\/+/, '').replace(/\/+$/, '');
      const re = glob
        .split(/(\*\*\/?|\*|\?)/)
        .map((part) => (part === '**/' ? '(?:.*/)?' : part === '**' ? '.*' : part === '*' ? '[^/]*' : part === '?' ? '[^/]' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
        .join('');
      return { negate, re: new RegExp(`^${re}(?:/.*)?$`) };
    });
  let ignored = false;
  for (const r of rules) if (r.re.test(path)) ignored = !r.negate;
  return ignored;
}
