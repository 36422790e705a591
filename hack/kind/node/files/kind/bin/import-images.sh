#!/bin/bash
# Imports the component images the node image carries (/kind/images/*.tar, OCI archives) into
# containerd's k8s.io namespace once per node, before the kubelet starts: no registry is needed for the
# control plane, kube-proxy and the pod sandbox. Run by kind-import-images.service.
set -o errexit -o nounset -o pipefail
shopt -s nullglob
stamp=/var/lib/kind-images.imported
[[ -f "$stamp" ]] && exit 0
for archive in /kind/images/*.tar; do
  echo "importing $archive"
  ctr --namespace k8s.io images import "$archive"
done
touch "$stamp"
