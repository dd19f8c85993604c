import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';

/** The page (Swagger UI) of an app's HTTP API. */
export const API_DOCS_PATH = 'api/docs';
/** The OpenAPI 3 document of an app's HTTP API, as JSON. */
export const API_DOCS_JSON_PATH = 'api/docs/openapi.json';

const HTTP_METHODS = ['get', 'post', 'put', 'delete', 'patch', 'head', 'options'] as const;

/** One route, `GET /api/v1/chambers/{key}` (OpenAPI path syntax). */
export type RouteKey = string;

/** Express `:param` segments as OpenAPI `{param}`. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/**
 * The security scheme of every app's document: `Authorization: Bearer <token>`, under the name
 * `@ApiBearerAuth()` refers to by default. Swagger UI shows its Authorize button for it.
 */
export const BEARER_SCHEME = 'bearer';

/** Which operations of the document need the bearer token (beyond those marked `@ApiBearerAuth()`). */
export interface ApiDocsAuth {
  /** True for an OpenAPI path (`/api/v1/chambers/{key}`) whose operations need the token. */
  readonly bearerPaths: (path: string) => boolean;
  /** What the token is (e.g. the variable that holds it), shown by the Authorize dialog. */
  readonly description: string;
}

/**
 * Builds the app's OpenAPI document from its controllers (routes, parameters, the `@ApiOperation`
 * and `@ApiResponse` decorators on them), with the bearer security scheme defined; with `auth`,
 * the operations on its paths require it.
 */
export function buildApiDocument(app: INestApplication, title: string, description: string, version: string, auth?: ApiDocsAuth): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle(title)
    .setDescription(description)
    .setVersion(version)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: auth?.description ?? 'The token the operation names, as `Authorization: Bearer <token>`.' }, BEARER_SCHEME)
    .build();
  const document = SwaggerModule.createDocument(app, config);
  if (auth) requireBearer(document, auth.bearerPaths);
  return document;
}

/** Marks the operations on `paths` as needing the bearer token (unless they declare their own security). */
function requireBearer(document: OpenAPIObject, paths: (path: string) => boolean): void {
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    if (!paths(path)) continue;
    for (const m of HTTP_METHODS) {
      const op = (item as Record<string, { security?: unknown } | undefined>)[m];
      if (op && op.security === undefined) op.security = [{ [BEARER_SCHEME]: [] }];
    }
  }
}

/**
 * Security schemes the document refers to (globally or on an operation) without defining them in
 * `components.securitySchemes`, sorted: Swagger UI cannot authorize them. Empty when all are defined.
 */
export function undefinedSecuritySchemes(document: OpenAPIObject): string[] {
  const defined = new Set(Object.keys(document.components?.securitySchemes ?? {}));
  const referred = new Set<string>();
  const add = (security: unknown) => {
    if (!Array.isArray(security)) return;
    for (const requirement of security) for (const name of Object.keys((requirement ?? {}) as object)) referred.add(name);
  };
  add(document.security);
  for (const item of Object.values(document.paths ?? {})) for (const m of HTTP_METHODS) add((item as Record<string, { security?: unknown } | undefined>)[m]?.security);
  return [...referred].filter((name) => !defined.has(name)).sort();
}

/**
 * Serves the app's API documentation: the page at `/api/docs` (with an Authorize button for the
 * bearer token, kept across reloads), the document at `/api/docs/openapi.json`. Call before the app
 * listens. Returns the document.
 */
export function setupApiDocs(app: INestApplication, title: string, description: string, version: string, auth?: ApiDocsAuth): OpenAPIObject {
  const document = buildApiDocument(app, title, description, version, auth);
  SwaggerModule.setup(API_DOCS_PATH, app, document, { jsonDocumentUrl: API_DOCS_JSON_PATH, raw: ['json'], swaggerOptions: { persistAuthorization: true } });
  return document;
}

/** Every operation of a document, `METHOD /path`. */
export function documentedRoutes(document: OpenAPIObject): Set<RouteKey> {
  const out = new Set<RouteKey>();
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const m of HTTP_METHODS) if ((item as Record<string, unknown>)[m]) out.add(`${m.toUpperCase()} ${path}`);
  }
  return out;
}

interface ExpressLayer {
  route?: { path?: unknown; methods?: Record<string, boolean> };
}

/**
 * The routes the running app serves (Express's router, after `listen`/`init`), except the API
 * documentation's own: `METHOD /path` in OpenAPI path syntax.
 */
export function servedRoutes(app: INestApplication): Set<RouteKey> {
  const instance = app.getHttpAdapter().getInstance() as { router?: { stack?: ExpressLayer[] }; _router?: { stack?: ExpressLayer[] } };
  const stack = instance.router?.stack ?? instance._router?.stack ?? [];
  const out = new Set<RouteKey>();
  for (const layer of stack) {
    const path = layer.route?.path;
    if (typeof path !== 'string' || path.startsWith(`/${API_DOCS_PATH}`)) continue;
    for (const [m, on] of Object.entries(layer.route?.methods ?? {})) {
      if (on && m !== '_all') out.add(`${m.toUpperCase()} ${openApiPath(path)}`);
    }
  }
  return out;
}

/**
 * Routes served but not documented, and documented but not served (both sorted; empty when the
 * document matches the app).
 */
export function apiDocsMismatch(document: OpenAPIObject, served: ReadonlySet<RouteKey>): { undocumented: RouteKey[]; notServed: RouteKey[] } {
  const documented = documentedRoutes(document);
  return {
    undocumented: [...served].filter((r) => !documented.has(r)).sort(),
    notServed: [...documented].filter((r) => !served.has(r)).sort(),
  };
}
