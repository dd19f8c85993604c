import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEVELOPMENT_DEVTOOL, devtoolFor, PRODUCTION_DEVTOOL, withSourceMaps } from '../../webpack.preset';

describe('the apps\' webpack source maps', () => {
  it('builds line-level maps without sources for production and full ones for nx serve', () => {
    expect(PRODUCTION_DEVTOOL).toBe('nosources-cheap-module-source-map');
    expect(DEVELOPMENT_DEVTOOL).toBe('source-map');
    expect(devtoolFor('production')).toBe(PRODUCTION_DEVTOOL);
    expect(devtoolFor(undefined)).toBe(PRODUCTION_DEVTOOL);
    expect(devtoolFor('development')).toBe(DEVELOPMENT_DEVTOOL);
  });

  it('sets the devtool from the build configuration Nx passes to the plugin', () => {
    const plugin = withSourceMaps();
    expect(plugin({ devtool: 'eval' }, { context: { configurationName: 'development' } }).devtool).toBe('source-map');
    expect(plugin({ devtool: 'eval' }, { context: { configurationName: 'production' } }).devtool).toBe('nosources-cheap-module-source-map');
  });

  it('every app bundle composes it', () => {
    for (const app of ['defender', 'assignment-controller', 'election-agent', 'dashboard']) {
      const config = readFileSync(join(__dirname, '..', '..', 'apps', app, 'webpack.config.js'), 'utf8');
      expect({ app, composes: config.includes('withSourceMaps()'), setsItsOwn: /config\.devtool\s*=/.test(config) }).toEqual({ app, composes: true, setsItsOwn: false });
    }
  });
});
