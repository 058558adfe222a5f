#!/bin/sh
# One-shot (docker-compose.yml, minio-bucket): the bucket of FORGE_ARTIFACTS_URL
# (s3://BUCKET/PREFIX) on FORGE_S3_ENDPOINT, as the AWS_* credentials Forge uses; safe to repeat.
set -eu
bucket="${FORGE_ARTIFACTS_URL#s3://}"
bucket="${bucket%%/*}"
mc alias set forge "$FORGE_S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >/dev/null
mc mb --ignore-existing "forge/$bucket"
