import { join, relative } from 'node:path';
import jestConfig from '../../jest.config';
import { reportDir } from '../lib/report';

const REPO = join(__dirname, '..', '..', '..', '..');

describe('where the chaos tests write their reports', () => {
  it('the Jest config loads the setup that sends them to tmp/', () => {
    expect(jestConfig.setupFiles).toContain('<rootDir>/src/testing/report-dir.ts');
  });

  it('by default tmp/chaos, not the committed docs/chaos (CHAOS_REPORT_DIR still chooses)', () => {
    const saved = process.env['CHAOS_REPORT_DIR'];
    delete process.env['CHAOS_REPORT_DIR'];
    try {
      expect(relative(REPO, reportDir())).toBe(join('docs', 'chaos')); // `npm run chaos`
      jest.isolateModules(() => {
        require('./report-dir');
      });
      const dir = relative(REPO, reportDir());
      expect(dir).toBe(join('tmp', 'chaos'));
      expect(dir.startsWith('docs')).toBe(false);
      process.env['CHAOS_REPORT_DIR'] = '/elsewhere';
      jest.isolateModules(() => {
        require('./report-dir');
      });
      expect(reportDir()).toBe('/elsewhere');
    } finally {
      if (saved === undefined) delete process.env['CHAOS_REPORT_DIR'];
      else process.env['CHAOS_REPORT_DIR'] = saved;
    }
  });
});
