import { stuckBehindMetaLeader } from './nats-cluster';

describe('stuckBehindMetaLeader: the node a failed health wait names as stuck behind its meta leader', () => {
  const timedOut = 'timed out after 60000 ms waiting for every running NATS node healthy and a current, online peer of the JetStream meta leader';

  it("names the node whose own /healthz says it is not current with the meta leader", () => {
    expect(stuckBehindMetaLeader(`${timedOut}; last seen: n1 /healthz: 503 {"status":"unavailable","error":"JetStream is not current with the meta leader"}`)).toBe('n1');
  });

  it.each([
    ['a node only its meta leader lists as behind (its own probe passes)', `${timedOut}; last seen: meta leader n0 lists n2 as {"name":"n2","current":false}`],
    ['no meta leader', `${timedOut}; last seen: no meta leader among n0, n1, n2 (they name n0: -, n1: -, n2: -)`],
    ['another health failure', `${timedOut}; last seen: n1 /healthz: 503 {"error":"JetStream stream 'X' is not current"}`],
    ['no answer at all', `${timedOut}; last seen: no answer`],
  ])('names nobody for %s (a restart would not be the probe-cured defect)', (_what, message) => {
    expect(stuckBehindMetaLeader(message)).toBeUndefined();
  });
});
