/** Injection token of the validated {@link ElectionAgentConfig}. */
export const ELECTION_AGENT_CONFIG = Symbol('ELECTION_AGENT_CONFIG');
