#!/bin/sh
# Run once by the postgres image when its volume is new (/docker-entrypoint-initdb.d): makes
# svc-vault's role with deploy/postgres-roles.sql, its password from the vault-db-password secret.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v role=svc_vault -v dbname="$POSTGRES_DB" -v password="$(cat /run/secrets/vault-db-password)" \
  -f /etc/svc-vault/postgres-roles.sql
