# A primary node of the compose cluster (docker-compose.yml), on the `postgres` service. The
# template of every primary node: deploy/setup.sh writes one <node>.hcl per name in
# PRIMARY_NODES into the config volume, with @NODE@ replaced by the node's name (its compose
# service name and hostname), @PG_PASSWORD@ by the password the postgres service chose at its
# first start (deploy/postgres/entrypoint.sh) and @LICENSE_ISSUER_KEY@ by the license volume's
# issuer.pub. The connection is TLS, verified against the CA certificate that service made
# (the pg-client volume, mounted at /etc/tessera-pg).
storage "postgresql" {
  connection_url = "postgres://tessera:@PG_PASSWORD@@postgres:5432/tessera?sslmode=verify-full&sslrootcert=/etc/tessera-pg/ca.crt"
  table          = "vault_kv_store"
  # The primary nodes share this database: one holds the lease and is active, the others relay.
  ha_enabled     = "true"
  ha_table       = "vault_ha_locks"
}

listener "tcp" {
  address     = "0.0.0.0:8200"
  # Plain HTTP: docker-compose.yml publishes this port on the host's 127.0.0.1 only. In
  # production, give tls_cert_file and tls_key_file and drop this line.
  tls_disable = true
}

# What secondaries and clients are told: the compose service name resolves on the compose network.
api_addr     = "http://@NODE@:8200"
cluster_addr = "@NODE@:8201"

license_path        = "/etc/tessera-license/license.json"
license_issuer_keys = ["@LICENSE_ISSUER_KEY@"]
log_level           = "info"

# The WAL tail kept for secondaries: a secondary that falls further behind than this
# reconciles (merkle-diff, merkle-sync) instead of streaming.
replication {
  wal_max_entries = 100000
  wal_max_bytes   = 268435456
}
