// Store: domain ports and persisted record types (libs/contracts/src/lib/store).
export * from './lib/store';

// Cluster: assignment map, heartbeats, stable-ID claims (libs/contracts/src/lib/cluster).
export * from './lib/cluster';
