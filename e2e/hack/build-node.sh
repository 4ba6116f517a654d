#!/usr/bin/env bash
# Builds what a real node of the local cluster needs (`cluster up --real-nodes N`) and what builds
# images without Docker (`npm run image`), from the Go module proxy into the cache outside the
# repo, keyed by version (versions.json), as build-control-plane.sh does for the control plane:
#   kubelet                        k8s.io/kubernetes/cmd/kubelet (same version as the control plane)
#   pause                          the sandbox image's binary: k8s.io/kubernetes/build/pause/linux/pause.c
#                                  from the same module, compiled with gcc -static as its Makefile does
#   containerd, containerd-shim-runc-v2, ctr
#                                  github.com/containerd/containerd/v2 (Kubernetes 1.36 needs containerd 2.x)
#   crictl                         sigs.k8s.io/cri-tools (`cluster down` removes pod sandboxes through CRI,
#                                  so their network namespaces and IPs are released as the kubelet would)
#   crane                          github.com/google/go-containerregistry (builds and pushes images)
# runc, the CNI plugins, docker-registry, iptables and busybox-static come from Debian's packages:
# e2e/hack/install-node-packages.sh. Run build-control-plane.sh first (the kubelet reuses its module).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
K8S_VERSION="$(version_of kubernetes)"
CONTAINERD_VERSION="$(version_of containerd)"
CRI_TOOLS_VERSION="$(version_of cri-tools)"
GGCR_VERSION="$(version_of go-containerregistry)"
K8S_BIN="$CACHE/bin/k8s-$K8S_VERSION"
CTRD_BIN="$CACHE/bin/containerd-$CONTAINERD_VERSION"
CRI_BIN="$CACHE/bin/cri-tools-$CRI_TOOLS_VERSION"
GGCR_BIN="$CACHE/bin/go-containerregistry-$GGCR_VERSION"
mkdir -p "$K8S_BIN" "$CTRD_BIN" "$CRI_BIN" "$GGCR_BIN"
require_go "the kubelet, containerd, crictl and crane"

built=0
# --- kubelet and pause, from the control plane's k8s.io/kubernetes module ---------------------
k8s_mod="$WORK/k8s-$K8S_VERSION"
if [ ! -x "$K8S_BIN/kubelet" ]; then
  [ -f "$k8s_mod/go.mod" ] || { echo "error: run e2e/hack/build-control-plane.sh first ($k8s_mod/go.mod missing)" >&2; exit 4; }
  echo "building kubelet $K8S_VERSION"
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ldf="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=module-proxy-$K8S_VERSION"
  done
  log="$LOGS/kubelet-$K8S_VERSION.log"; : >"$log"
  (cd "$k8s_mod" && run kubelet "$log" go build -trimpath -ldflags "$ldf" -o "$K8S_BIN/kubelet.tmp" k8s.io/kubernetes/cmd/kubelet)
  mv "$K8S_BIN/kubelet.tmp" "$K8S_BIN/kubelet"
  built=1
fi
if [ ! -x "$K8S_BIN/pause" ]; then
  src="$(cd "$k8s_mod" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
  tag=$(sed -n 's/^TAG ?= *//p' "$(dirname "$src")/../Makefile")
  echo "building pause $tag (gcc -static, as build/pause/Makefile)"
  log="$LOGS/pause-$K8S_VERSION.log"; : >"$log"
  run pause "$log" gcc -Os -Wall -Werror -static -DVERSION="v$tag-module-proxy" -o "$K8S_BIN/pause.tmp" "$src"
  strip "$K8S_BIN/pause.tmp"
  mv "$K8S_BIN/pause.tmp" "$K8S_BIN/pause"
  echo "$tag" >"$K8S_BIN/pause.version"
  built=1
fi

# --- containerd ----------------------------------------------------------------------------------
if [ ! -x "$CTRD_BIN/containerd" ] || [ ! -x "$CTRD_BIN/containerd-shim-runc-v2" ] || [ ! -x "$CTRD_BIN/ctr" ]; then
  echo "building containerd $CONTAINERD_VERSION (containerd, containerd-shim-runc-v2, ctr)"
  mod="$WORK/containerd-$CONTAINERD_VERSION"; mkdir -p "$mod"
  log="$LOGS/containerd-$CONTAINERD_VERSION.log"; : >"$log"
  pkgver="github.com/containerd/containerd/v2/version"
  ldf="-s -w -X $pkgver.Version=$CONTAINERD_VERSION -X $pkgver.Revision=module-proxy"
  (
    cd "$mod"
    [ -f go.mod ] || run containerd "$log" go mod init e2e.local/containerdbins
    run containerd "$log" go get "github.com/containerd/containerd/v2@$CONTAINERD_VERSION"
    # No btrfs, devmapper or zfs snapshotters: they need cgo, and the node uses overlayfs.
    for c in containerd containerd-shim-runc-v2 ctr; do
      run "$c" "$log" go build -trimpath -tags "no_btrfs no_devmapper no_zfs" -ldflags "$ldf" \
        -o "$CTRD_BIN/$c.tmp" "github.com/containerd/containerd/v2/cmd/$c"
      mv "$CTRD_BIN/$c.tmp" "$CTRD_BIN/$c"
    done
  )
  built=1
fi

# --- crictl and crane ------------------------------------------------------------------------------
if [ ! -x "$CRI_BIN/crictl" ]; then
  echo "building crictl $CRI_TOOLS_VERSION"
  log="$LOGS/cri-tools-$CRI_TOOLS_VERSION.log"; : >"$log"
  run crictl "$log" env GOBIN="$CRI_BIN" GOFLAGS= go install -trimpath -ldflags "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRI_TOOLS_VERSION"
  built=1
fi
if [ ! -x "$GGCR_BIN/crane" ]; then
  echo "building crane $GGCR_VERSION"
  log="$LOGS/go-containerregistry-$GGCR_VERSION.log"; : >"$log"
  run crane "$log" env GOBIN="$GGCR_BIN" GOFLAGS= go install -trimpath -ldflags "-s -w" "github.com/google/go-containerregistry/cmd/crane@$GGCR_VERSION"
  built=1
fi

if [ "$built" = 1 ]; then echo "node binaries ready in $CACHE/bin"; else echo "node binaries cached in $CACHE/bin"; fi
