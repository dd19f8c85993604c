// Jest setup: scenario reports of the test suite go to tmp/chaos (tests never rewrite tracked files);
// `npm run chaos` keeps writing docs/chaos, and CHAOS_REPORT_DIR still chooses for both.
import { join } from 'node:path';

process.env['CHAOS_REPORT_DIR'] ??= join(__dirname, '..', '..', '..', '..', 'tmp', 'chaos');
