import type { Command } from '../../src/cli/command.ts';

// Placeholder until the cluster runner lands (same commit series, issue #2).
export const clusterCommand: Command = {
  name: 'cluster',
  summary: 'Local real control plane: up | down | status',
  usage: 'Usage: advanced-daemonset cluster up|down|status',
  run: async () => 0,
};
