#!/bin/sh
# One-shot (docker-compose.yml, temporal-setup): the namespace of FORGE_NAMESPACE and the
# ForgeTenant Keyword search attribute (workflows/policies.py TENANT_ATTRIBUTE); safe to repeat.
set -eu
NAMESPACE="${FORGE_NAMESPACE:-default}"
ATTRIBUTE=ForgeTenant
until temporal operator cluster health >/dev/null 2>&1; do sleep 1; done
temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1 ||
  temporal operator namespace create --namespace "$NAMESPACE" --retention 72h
# A new namespace reaches every frontend's cache a few seconds after it is created.
tries=0
until attributes=$(temporal operator search-attribute list --namespace "$NAMESPACE" 2>&1); do
  tries=$((tries + 1))
  if [ "$tries" -ge 120 ]; then
    echo "temporal-setup: namespace $NAMESPACE did not become usable: $attributes" >&2
    exit 1
  fi
  sleep 1
done
if ! printf '%s\n' "$attributes" | grep -qw "$ATTRIBUTE"; then
  temporal operator search-attribute create --namespace "$NAMESPACE" \
    --name "$ATTRIBUTE" --type Keyword
fi
echo "namespace $NAMESPACE ready with search attribute $ATTRIBUTE (Keyword)"
