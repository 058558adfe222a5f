#!/bin/sh
# One-shot (docker-compose.yml, temporal-schema): Temporal's databases and schema, set up with
# the admin tools' temporal-sql-tool as Temporal's auto-setup.sh (setup_postgres_schema) does:
# plugin postgres, the v12 schema, SQL_PASSWORD as the password. Safe to repeat.
set -eu
SCHEMA=/etc/temporal/schema/postgresql/v12
sql() { temporal-sql-tool --plugin postgres --ep temporal-postgres -p 5432 -u temporal "$@"; }
for db in temporal temporal_visibility; do
  sql --db "$db" create 2>/dev/null || echo "database $db exists"
done
sql --db temporal setup-schema -v 0.0
sql --db temporal update-schema -d "$SCHEMA/temporal/versioned"
sql --db temporal_visibility setup-schema -v 0.0
sql --db temporal_visibility update-schema -d "$SCHEMA/visibility/versioned"
