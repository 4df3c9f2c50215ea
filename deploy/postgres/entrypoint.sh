#!/bin/sh
# PostgreSQL for the compose cluster's primary nodes. Every start makes sure of three things
# before postgres runs in the foreground (as PID 1's child):
# - The role $POSTGRES_USER has a password, and the client volume ($CLIENT, mounted read-only at
#   /etc/tessera-pg in setup and the primary nodes) holds it as `password` (mode 0600; setup runs
#   as root and renders it into the primaries' configs). It is chosen once, at the first start
#   that finds no `password` there: $POSTGRES_PASSWORD (TESSERA_PG_PASSWORD in the compose
#   environment) when set, else 32 random letters and digits; a data volume initialised before
#   (with its old password) gets the new one by ALTER ROLE. Later starts keep it; a different
#   $POSTGRES_PASSWORD then is refused rather than silently ignored.
# - TLS: a CA made here (its key discarded once it signed) and a server certificate for the host
#   name `postgres`; the CA certificate is `ca.crt` in the client volume, and the nodes connect
#   with sslmode=verify-full against it.
# - pg_hba.conf (written afresh every start): over TCP only TLS, only $POSTGRES_USER to
#   $POSTGRES_DB with scram-sha-256, only from networks this container is on (samenet: the
#   compose file puts it on an internal network with the primary nodes alone, and publishes no port).
set -eu
: "${POSTGRES_USER:?}" "${POSTGRES_DB:?}"
CLIENT=${TESSERA_PG_CLIENT_DIR:-/var/lib/tessera-pg-client}
umask 077
valid() {
  case $1 in '' | *[!A-Za-z0-9]*) return 1 ;; esac
}
fresh=false
[ -s "$PGDATA/PG_VERSION" ] || fresh=true
if [ -s "$CLIENT/password" ]; then
  password=$(cat "$CLIENT/password")
  if [ -n "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_PASSWORD" != "$password" ]; then
    echo "tessera-postgres: TESSERA_PG_PASSWORD differs from the password this database was given at its first start (kept in the pg-client volume); unset it, or change the password with ALTER ROLE and the volume's password file together" >&2
    exit 1
  fi
  new=false
else
  password=${POSTGRES_PASSWORD:-$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 32)}
  new=true
fi
if ! valid "$password"; then
  echo "tessera-postgres: the PostgreSQL password must be letters and digits only (it goes into a connection URL)" >&2
  exit 1
fi
if $fresh; then
  pwfile=$(mktemp)
  printf '%s\n' "$password" > "$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8
  rm -f "$pwfile"
fi
if $fresh || $new; then
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/run/postgresql" -w start
  if $fresh; then
    createdb -h /run/postgresql -U "$POSTGRES_USER" -O "$POSTGRES_USER" "$POSTGRES_DB"
  else
    psql -h /run/postgresql -U "$POSTGRES_USER" -d postgres -v ON_ERROR_STOP=1 -q -c "ALTER ROLE \"$POSTGRES_USER\" PASSWORD '$password'"
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop
  printf '%s\n' "$password" > "$CLIENT/password.tmp"
  mv "$CLIENT/password.tmp" "$CLIENT/password"
  echo "tessera-postgres: the password of role $POSTGRES_USER is set and kept in the pg-client volume"
fi
if [ ! -s "$PGDATA/server.crt" ] || [ ! -s "$CLIENT/ca.crt" ]; then
  work=$(mktemp -d)
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj /CN=tessera-postgres-ca \
    -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=postgres -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:postgres\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n' > "$work/ext"
  openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -set_serial "0x$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" \
    -days 3650 -extfile "$work/ext" -out "$work/server.crt" 2>/dev/null
  cp "$work/server.key" "$PGDATA/server.key"
  cp "$work/server.crt" "$PGDATA/server.crt"
  cp "$work/ca.crt" "$CLIENT/ca.crt.tmp"
  chmod 0644 "$CLIENT/ca.crt.tmp"
  mv "$CLIENT/ca.crt.tmp" "$CLIENT/ca.crt"
  rm -rf "$work"
  echo "tessera-postgres: TLS certificate made for host postgres; its CA is ca.crt in the pg-client volume"
fi
cat > "$PGDATA/pg_hba.conf" <<HBA
# Written by the entrypoint at every start (deploy/postgres/entrypoint.sh).
local   all              all                         trust
hostssl $POSTGRES_DB $POSTGRES_USER samenet scram-sha-256
HBA
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql \
  -c ssl=on -c ssl_cert_file="$PGDATA/server.crt" -c ssl_key_file="$PGDATA/server.key" -c password_encryption=scram-sha-256
