#!/usr/bin/env bash
# Builds the upstream control-plane binaries used by the local cluster from the Go module proxy
# and caches them outside the repo, keyed by version. Rebuilds only what is missing.
#   ADS_CACHE_DIR   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/advanced-daemonset; lib.sh)
# Prints "building <component>" lines; a cold build takes many minutes on 2 cores.
set -euo pipefail

# Versions live in e2e/cluster/versions.json, read by this script and by the cluster runner.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
K8S_VERSION="${K8S_VERSION:-$(version_of kubernetes)}"
ETCD_VERSION="${ETCD_VERSION:-}" # default: the etcd client version Kubernetes resolves
KWOK_VERSION="${KWOK_VERSION:-$(version_of kwok)}"
HELM_VERSION="${HELM_VERSION:-$(version_of helm)}"
BIN="$CACHE/bin/k8s-$K8S_VERSION"
mkdir -p "$BIN"
require_go "kube-apiserver, etcd, kwok and helm"

have() { for b in "$@"; do [ -x "$BIN/$b" ] || return 1; done; }

missing=()
have kube-apiserver kube-controller-manager kube-scheduler kubectl || missing+=(kubernetes)
have etcd || missing+=(etcd)
[ -x "$CACHE/bin/kwok-$KWOK_VERSION/kwok" ] || missing+=(kwok)
[ -x "$CACHE/bin/helm-$HELM_VERSION/helm" ] || missing+=(helm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "control plane binaries cached in $CACHE/bin (kubernetes $K8S_VERSION, kwok $KWOK_VERSION, helm $HELM_VERSION)"
  exit 0
fi
echo "building ${missing[*]} from the Go module proxy into $CACHE/bin"
echo "a cold build takes many minutes (about 15-30 on 2 cores); later runs reuse the cache"

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
staging_version="v0.${K8S_VERSION#v1.}"
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# --- kubernetes --------------------------------------------------------------------------------
k8s_mod="$WORK/k8s-$K8S_VERSION"
if [[ " ${missing[*]} " == *" kubernetes "* || " ${missing[*]} " == *" etcd "* ]]; then
  mkdir -p "$k8s_mod"
  log="$LOGS/kubernetes-$K8S_VERSION.log"; : >"$log"
  if [ ! -f "$k8s_mod/go.mod" ] || ! grep -q "k8s.io/kubernetes $K8S_VERSION" "$k8s_mod/go.mod"; then
    echo "[1/4] resolving k8s.io/kubernetes $K8S_VERSION modules"
    rm -f "$k8s_mod/go.mod" "$k8s_mod/go.sum"
    (cd "$k8s_mod" && run "kubernetes (go mod init)" "$log" go mod init e2e.local/k8sbins)
    run "kubernetes (download)" "$log" go mod download -json "k8s.io/kubernetes@$K8S_VERSION"
    upstream_mod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
    # k8s.io/kubernetes points its staging modules at ./staging; replace each with its published tag.
    goline=$(sed -n 's/^go \(.*\)$/\1/p' "$upstream_mod" | head -1)
    godebug=$(sed -n 's/^godebug \(.*\)$/\1/p' "$upstream_mod" | head -1)
    (
      cd "$k8s_mod"
      go mod edit -go="$goline"
      [ -z "$godebug" ] || go mod edit -godebug="$godebug"
      for m in $(sed -n 's|.*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*|\1|p' "$upstream_mod"); do
        go mod edit -replace="$m=$m@$staging_version"
      done
      run "kubernetes (go get)" "$log" go get "k8s.io/kubernetes@$K8S_VERSION"
      cat > tools.go <<'GO'
package k8sbins
GO
    )
  fi
fi
if [[ " ${missing[*]} " == *" kubernetes "* ]]; then
  echo "[2/4] building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $K8S_VERSION (the slow part)"
  ldf="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=module-proxy-$K8S_VERSION -X $pkg.buildDate=$build_date"
  done
  (
    cd "$k8s_mod"
    for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
      [ -x "$BIN/$c" ] && continue
      echo "      building $c ..."
      start=$SECONDS
      run "$c" "$log" go build -trimpath -ldflags "$ldf" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c"
      mv "$BIN/$c.tmp" "$BIN/$c"
      echo "      built $c in $((SECONDS - start))s"
    done
  )
fi

# --- etcd ----------------------------------------------------------------------------------------
if [[ " ${missing[*]} " == *" etcd "* ]]; then
  if [ -z "$ETCD_VERSION" ]; then
    ETCD_VERSION=$(cd "$k8s_mod" && go list -m -f '{{.Version}}' go.etcd.io/etcd/client/v3)
  fi
  echo "[3/4] building etcd $ETCD_VERSION"
  etcd_mod="$WORK/etcd-$ETCD_VERSION"; mkdir -p "$etcd_mod"
  log="$LOGS/etcd-$ETCD_VERSION.log"; : >"$log"
  (
    cd "$etcd_mod"
    [ -f go.mod ] || run etcd "$log" go mod init e2e.local/etcdbin
    run etcd "$log" go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    run etcd "$log" go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
    mv "$BIN/etcd.tmp" "$BIN/etcd"
  )
fi

# --- kwok and helm -------------------------------------------------------------------------------
if [[ " ${missing[*]} " == *" kwok "* ]]; then
  echo "[4/4] building kwok $KWOK_VERSION"
  log="$LOGS/kwok-$KWOK_VERSION.log"; : >"$log"
  d="$CACHE/bin/kwok-$KWOK_VERSION"; mkdir -p "$d"
  run kwok "$log" env GOBIN="$d" GOFLAGS= go install -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
fi
if [[ " ${missing[*]} " == *" helm "* ]]; then
  echo "[4/4] building helm $HELM_VERSION"
  log="$LOGS/helm-$HELM_VERSION.log"; : >"$log"
  d="$CACHE/bin/helm-$HELM_VERSION"; mkdir -p "$d"
  run helm "$log" env GOBIN="$d" GOFLAGS= go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
echo "control plane binaries ready in $CACHE/bin"
