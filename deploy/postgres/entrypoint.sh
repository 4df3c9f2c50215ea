#!/bin/sh
# First start (an empty $PGDATA): initdb, the role $POSTGRES_USER with $POSTGRES_PASSWORD
# (scram-sha-256 from any address; the compose file publishes no port) owning the database
# $POSTGRES_DB. Later starts keep what the volume holds: changing the password later means
# ALTER ROLE, or `docker-compose down -v`. Then postgres runs in the foreground as PID 1's child.
set -eu
: "${POSTGRES_USER:?}" "${POSTGRES_PASSWORD:?}" "${POSTGRES_DB:?}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/run/postgresql" -w start
  createdb -h /run/postgresql -U "$POSTGRES_USER" -O "$POSTGRES_USER" "$POSTGRES_DB"
  pg_ctl -D "$PGDATA" -m fast -w stop
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql
