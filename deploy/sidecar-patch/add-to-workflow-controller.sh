#!/bin/sh
# add-to-workflow-controller.sh NAMESPACE IMAGE [PATCH]: adds our container, its volumes and the
# default-container annotation to Argo's workflow-controller Deployment in NAMESPACE, or brings
# them up to this release's definition, with the strategic merge patch workflow-controller.yaml
# (or PATCH, - for standard input: the OpenShift variant). The image is the one our container
# already has, if it is there (a run before, or `kubectl set image` since: an upgrade of the image
# is `kubectl set image`), else IMAGE: running it again never puts an older image back. Running
# it again with nothing changed changes nothing ("patched (no change)").
set -eu
usage='usage: add-to-workflow-controller.sh NAMESPACE IMAGE [PATCH]'
namespace=${1:?$usage}
image=${2:?$usage}
patch=${3:-$(dirname "$0")/workflow-controller.yaml}
live=$(kubectl -n "$namespace" get deployment workflow-controller \
  -o jsonpath='{.spec.template.spec.containers[?(@.name=="finalizer-sweeper")].image}')
text=$(cat "$patch")
case $text in
  *'image: finalizer-sweeper:'*) ;;
  *) echo "add-to-workflow-controller.sh: $patch has no 'image: finalizer-sweeper:' line to fill in" >&2; exit 2 ;;
esac
kubectl -n "$namespace" patch deployment workflow-controller \
  --patch "$(printf '%s\n' "$text" | sed "s|^\( *\)image: finalizer-sweeper:[^ ]*\$|\1image: ${live:-$image}|")"
