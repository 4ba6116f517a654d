# Shared by the build scripts beside it (sourced): versions.json, the cache layout, the Go check and `run`.
#   ADS_CACHE_DIR   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/advanced-daemonset)
versions="$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd)/versions.json"
version_of() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" "$versions"; }
CACHE="${ADS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/advanced-daemonset}"
WORK="$CACHE/work"
LOGS="$CACHE/logs"
mkdir -p "$WORK" "$LOGS"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

# require_go WHAT: exits 3 (which ensureBinaries reports as "install Go") when go is missing.
require_go() {
  if ! command -v go >/dev/null 2>&1; then
    echo "error: Go is not installed (needed to build $1 from the Go module proxy)." >&2
    echo "       Install Go >= 1.26 and re-run." >&2
    exit 3
  fi
}

# run STEP LOG CMD...: runs a command with its output in a log file; on failure shows the
# command and the tail of the log so the user sees why without digging.
run() {
  local step=$1 log=$2; shift 2
  if ! "$@" >>"$log" 2>&1; then
    echo "error: building $step failed: $*" >&2
    echo "------ last 40 lines of $log ------" >&2
    tail -n 40 "$log" >&2
    exit 4
  fi
}
