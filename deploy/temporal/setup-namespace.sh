#!/bin/sh
# One-shot (docker-compose.yml, temporal-setup): the namespace of FORGE_NAMESPACE and the
# ForgeTenant Keyword search attribute (workflows/policies.py TENANT_ATTRIBUTE); safe to repeat.
set -eu
NAMESPACE="${FORGE_NAMESPACE:-default}"
until temporal operator cluster health >/dev/null 2>&1; do sleep 1; done
temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1 ||
  temporal operator namespace create --namespace "$NAMESPACE" --retention 72h
temporal operator search-attribute create --namespace "$NAMESPACE" \
  --name ForgeTenant --type Keyword 2>/dev/null ||
  temporal operator search-attribute list --namespace "$NAMESPACE" | grep -q ForgeTenant
echo "namespace $NAMESPACE ready with search attribute ForgeTenant (Keyword)"
