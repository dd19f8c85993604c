import type { OpenAPIObject } from '@nestjs/swagger';
import { apiDocsMismatch, documentedRoutes, openApiPath } from './api-docs';

const doc = (paths: OpenAPIObject['paths']): OpenAPIObject => ({ openapi: '3.0.0', info: { title: 't', version: 'v1' }, paths });

describe('API documentation against the served routes', () => {
  it('writes Express parameters the OpenAPI way', () => {
    expect(openApiPath('/api/v1/chambers/:key')).toBe('/api/v1/chambers/{key}');
    expect(openApiPath('/assets/:file/:part_2')).toBe('/assets/{file}/{part_2}');
    expect(openApiPath('/health/live')).toBe('/health/live');
  });

  it('lists every documented operation as METHOD /path', () => {
    const d = doc({ '/a': { get: { responses: {} }, post: { responses: {} } }, '/b/{id}': { delete: { responses: {} } } });
    expect([...documentedRoutes(d)].sort()).toEqual(['DELETE /b/{id}', 'GET /a', 'POST /a']);
  });

  it('reports routes served without documentation and documented routes not served', () => {
    const d = doc({ '/a': { get: { responses: {} } }, '/gone': { get: { responses: {} } } });
    expect(apiDocsMismatch(d, new Set(['GET /a', 'POST /new']))).toEqual({ undocumented: ['POST /new'], notServed: ['GET /gone'] });
    expect(apiDocsMismatch(d, new Set(['GET /a', 'GET /gone']))).toEqual({ undocumented: [], notServed: [] });
  });
});
