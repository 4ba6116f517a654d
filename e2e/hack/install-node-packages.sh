#!/usr/bin/env bash
# Installs the Debian packages a real node of the local cluster uses (`cluster up --real-nodes N`):
# runc (the OCI runtime containerd's shim calls), the CNI plugins (bridge, host-local, loopback),
# iptables (the Service address of the apiserver for pods), docker-registry (the cluster's image
# registry on 127.0.0.1) and busybox-static (the test daemon image). Does nothing when all are there.
# Needs root (apt-get); uses sudo when not root.
set -euo pipefail

need=()
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || need+=(iptables)
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
# The daemon image copies /usr/bin/busybox alone, so it must be the static build.
dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
if [ ${#need[@]} -eq 0 ]; then
  echo "node packages installed (runc, CNI plugins, iptables, docker-registry, busybox-static)"
  exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
echo "installing ${need[*]} (Debian packages)"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
