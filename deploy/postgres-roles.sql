-- svc-vault's role in PostgreSQL, with the least it needs: it logs in, connects to its one
-- database and owns one schema there, where its migrations create and change the tables at
-- start. It is no superuser, creates no database or role, and has nothing in `public`.
-- Run by a superuser (or the database's owner), connected to the vault's database:
--   psql -v role=svc_vault -v password="$(cat vault-db-password)" -v dbname=svc_vault -d svc_vault -f postgres-roles.sql
-- compose.postgres.yaml runs it once, when the database volume is made (deploy/postgres-init.sh).
CREATE ROLE :"role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'password';
-- Only this role (and the owner) may connect to the database.
REVOKE ALL ON DATABASE :"dbname" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"dbname" TO :"role";
-- Its tables live in a schema of its own (PostgreSQL 15 already takes CREATE on `public` from everyone).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE SCHEMA :"role" AUTHORIZATION :"role";
ALTER ROLE :"role" IN DATABASE :"dbname" SET search_path = :"role";
