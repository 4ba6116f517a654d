// The pod sandbox ("pause") image for containerd on the local cluster's real nodes: the pause binary that
// e2e/hack/build-node.sh compiles from the Kubernetes module (build/pause/linux/pause.c), in an image laid out as
// upstream's (https://github.com/kubernetes/kubernetes/blob/master/build/pause/Dockerfile: FROM scratch, /pause,
// USER 65535:65535, ENTRYPOINT ["/pause"]).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LayerPlan } from './layers.ts';
import { stageLayer } from './layers.ts';
import { buildAndPush, writeLayer, type ImageConfig } from './oci.ts';
import { imageTools, requireTool } from './tools.ts';

export const PAUSE_LAYER: LayerPlan = {
  name: 'pause',
  description: 'the pause binary (kubernetes build/pause/linux/pause.c, gcc -static)',
  entries: [{ kind: 'copy', path: '/pause', source: 'pause' }],
};

export const PAUSE_CONFIG: ImageConfig = { entrypoint: ['/pause'], user: '65535:65535' };

/** Pushes REGISTRY/pause:TAG (TAG from pause.version beside the binary); returns the reference. */
export async function pushPauseImage(registry: string, progress: (line: string) => void = () => {}): Promise<string> {
  const tools = imageTools();
  const binary = requireTool(tools.pause, 'the pause binary');
  const tag = readFileSync(requireTool(tools.pauseVersion, 'pause.version'), 'utf8').trim();
  const work = mkdtempSync(join(tmpdir(), 'ads-pause-'));
  try {
    const parts = await stageLayer(PAUSE_LAYER, { dir: join(work, 'stage'), sources: { pause: binary }, progress });
    const layer = join(work, 'pause.tar.gz');
    await writeLayer(parts, layer);
    const pushed = await buildAndPush({
      ref: `${registry}/pause:${tag}`,
      layers: [layer],
      config: PAUSE_CONFIG,
      history: [`${PAUSE_LAYER.name}: ${PAUSE_LAYER.description}`],
    });
    return pushed.ref;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
