// The product's commands: what the image runs (`manager` by default). Development commands (`cluster`, `demo`)
// are not here; they live behind hack/dev.ts, which the image bundle never includes.
import type { Command } from '../../src/cli/command.ts';
import { controllerCommand, managerCommand } from './manager.ts';
import { webhookCommand } from '../../webhook/command.ts';
import { certsCommand } from '../../certs/command.ts';

export const productCommands: readonly Command[] = [managerCommand, controllerCommand, webhookCommand, certsCommand];
