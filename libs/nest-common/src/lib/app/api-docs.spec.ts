import 'reflect-metadata';
import { Controller, Get, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ApiBearerAuth, ApiOperation, type OpenAPIObject } from '@nestjs/swagger';
import { apiDocsMismatch, buildApiDocument, documentedRoutes, openApiPath, undefinedSecuritySchemes } from './api-docs';

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

@Controller()
class DocsFixtureController {
  @ApiOperation({ summary: 'open' })
  @Get('health/live')
  live(): string {
    return 'ok';
  }

  @ApiOperation({ summary: 'read' })
  @Get('api/v1/things')
  things(): string[] {
    return [];
  }

  @ApiOperation({ summary: 'debug' })
  @ApiBearerAuth()
  @Post('debug/cpu-profile')
  profile(): string {
    return '';
  }
}

@Module({ controllers: [DocsFixtureController] })
class DocsFixtureModule {}

/** Issue 52, item 6: Swagger UI's Authorize button needs every security scheme the document refers to defined. */
describe('API documentation security schemes', () => {
  it('finds schemes referred to but not defined (what left Swagger UI without an Authorize button)', () => {
    const d = doc({ '/debug': { post: { responses: {}, security: [{ bearer: [] }] } }, '/x': { get: { responses: {}, security: [{ cookie: [], bearer: [] }] } } });
    expect(undefinedSecuritySchemes(d)).toEqual(['bearer', 'cookie']);
    expect(undefinedSecuritySchemes({ ...d, components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } } })).toEqual(['cookie']);
    expect(undefinedSecuritySchemes({ ...doc({}), security: [{ apiKey: [] }] })).toEqual(['apiKey']);
  });

  it("an app's document defines the bearer scheme @ApiBearerAuth() refers to, and marks the paths it is told need it", async () => {
    const app = await NestFactory.create(DocsFixtureModule, { logger: false });
    try {
      const plain = buildApiDocument(app, 't', 'd', 'v1');
      expect(plain.components?.securitySchemes).toEqual({ bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }) });
      expect(plain.paths['/debug/cpu-profile']?.post?.security).toEqual([{ bearer: [] }]);
      expect(plain.paths['/api/v1/things']?.get?.security).toBeUndefined();
      expect(undefinedSecuritySchemes(plain)).toEqual([]);

      const guarded = buildApiDocument(app, 't', 'd', 'v1', { bearerPaths: (p) => p.startsWith('/api/'), description: 'DASHBOARD_TOKENS' });
      expect(guarded.components?.securitySchemes?.['bearer']).toMatchObject({ description: 'DASHBOARD_TOKENS' });
      expect(guarded.paths['/api/v1/things']?.get?.security).toEqual([{ bearer: [] }]);
      expect(guarded.paths['/health/live']?.get?.security).toBeUndefined();
      expect(undefinedSecuritySchemes(guarded)).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
