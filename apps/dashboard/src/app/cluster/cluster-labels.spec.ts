import { loadPageRender } from '../../testing/page';
import type { ControllerView } from './cluster-view';

const render = loadPageRender();

function controller(over: Partial<ControllerView> = {}): ControllerView {
  return {
    url: 'http://127.0.0.1:8081',
    reachable: true,
    controllerId: 'controller-0',
    isLeader: true,
    clusterState: 'STABLE',
    lifecycle: 'stable',
    lastDecision: 'idle',
    pendingTrigger: null,
    activeDefenders: 3,
    assignmentVersion: 4,
    balanceBy: 'load',
    ...over,
  };
}

const map = { version: 4, state: 'EMERGENCY' };

/** Issue 52, item 3: the header's state and the map's weights say what they are. */
describe('cluster labels (assets/render.js)', () => {
  it("the header shows the leading controller's state as it reports it, not the state the map was published in", () => {
    expect(render.clusterStateFact({ map, controllers: [controller({ isLeader: false, clusterState: 'SCALING' }), controller({ url: 'u2', controllerId: 'controller-1' })] })).toEqual({
      value: 'STABLE',
      label: 'cluster state',
      title: 'as the leading controller controller-1 reports it now',
    });
    // No leader reachable: the map's state, labelled as the map's.
    expect(render.clusterStateFact({ map, controllers: [controller({ reachable: false, isLeader: false, clusterState: null })] })).toMatchObject({ value: 'EMERGENCY', label: 'state of map v4' });
    expect(render.clusterStateFact({ map, controllers: [] })).toMatchObject({ value: 'EMERGENCY', label: 'state of map v4' });
    expect(render.clusterStateFact({ map: null, controllers: [] })).toMatchObject({ value: '—', label: 'cluster state' });
  });

  it("one unit per figure: the map's weights as the controller balances (expected load in CPU s/h, or samples per run), no unit claimed when none says", () => {
    const load = render.mapWeightUnit({ controllers: [controller()] });
    expect(load).toBe('load');
    // 83.7 M µs of CPU per hour under the load model (ADR 0008): never "83.7M samples/run".
    expect(render.weightText(83_700_000, load)).toBe('83.7 CPU s/h');
    expect(render.weightName(load)).toBe('expected load');
    const samples = render.mapWeightUnit({ controllers: [controller({ reachable: false, balanceBy: null }), controller({ isLeader: false, balanceBy: 'samples' })] });
    expect(samples).toBe('samples');
    expect(render.weightText(3_800_000, samples)).toBe('3.8M samples/run');
    expect(render.weightName(samples)).toBe('samples per run');
    const unknown = render.mapWeightUnit({ controllers: [] });
    expect(unknown).toBeNull();
    expect(render.weightText(7_500_000, unknown)).toBe('7.5M (map weight)');
    expect(render.weightText(7_500_000, unknown)).not.toContain('samples');
    expect(render.weightName(unknown)).toBe('map weight');
  });
});
