import { seededRandom } from '@defender/hashing';
import { fitPcaModel } from './pca';
import { pcaResidualContributions, scorePca } from './pca-score';

describe('pcaResidualContributions', () => {
  it("is scorePca's SPE contributions bit for bit, complete runs or not", () => {
    const u = seededRandom(31);
    for (let t = 0; t < 20; t++) {
      const m = 12 + Math.floor(u() * 30);
      const p = 3 + Math.floor(u() * 40);
      const load = Array.from({ length: p }, () => u() - 0.5);
      const row = (): number[] => {
        const f = u() - 0.5;
        return Array.from({ length: p }, (_, j) => (j === 2 ? 7 : 100 * j + (load[j] as number) * f + 0.1 * (u() - 0.5)));
      };
      const names = Array.from({ length: p }, (_, j) => `v${j}`);
      const model = fitPcaModel(Array.from({ length: m }, row), names, { components: { rule: 'fixed', count: 1 + Math.floor(u() * 4) } });
      for (let i = 0; i < 20; i++) {
        const x = row();
        if (u() < 0.3) x[Math.floor(u() * p)] = u() < 0.5 ? NaN : Infinity;
        const got = pcaResidualContributions(model, x);
        const want = scorePca(model, x).contributionValues.spe;
        expect({ t, i, same: got.length === want.length && got.every((v, j) => Object.is(v, want[j])) }).toEqual({ t, i, same: true });
      }
    }
  });
});
