#!/bin/sh
# Runs once on an empty data directory (the postgres image's /docker-entrypoint-initdb.d):
# the owner role forge_owner (migrations, `forge db upgrade`) and the application role
# forge_app (NOSUPERUSER, NOBYPASSRLS, owns nothing; docs/isolation.md), with the passwords of
# FORGE_DATABASE_OWNER_URL and FORGE_DATABASE_URL from deploy/forge.env, and the database.
set -eu
password_of() { printf '%s' "$1" | sed -n 's#^[^:]*://[^:@/]*:\([^@]*\)@.*#\1#p'; }
owner_pw=$(password_of "$FORGE_DATABASE_OWNER_URL")
app_pw=$(password_of "$FORGE_DATABASE_URL")
if [ -z "$owner_pw" ] || [ -z "$app_pw" ]; then
  echo "FORGE_DATABASE_URL and FORGE_DATABASE_OWNER_URL in deploy/forge.env must each hold a password (postgresql+psycopg://ROLE:PASSWORD@forge-postgres:5432/forge)" >&2
  exit 1
fi
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v owner_pw="$owner_pw" -v app_pw="$app_pw" <<'SQL'
CREATE ROLE forge_owner LOGIN NOSUPERUSER PASSWORD :'owner_pw';
CREATE ROLE forge_app LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD :'app_pw';
CREATE DATABASE forge OWNER forge_owner;
SQL
