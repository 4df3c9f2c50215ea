# The DR secondary of the compose cluster (docker-compose.yml), a LevelDB node. deploy/setup.sh
# replaces @LICENSE_ISSUER_KEY@ with the license volume's issuer.pub and writes the result to
# dr-secondary.hcl in the config volume.
storage "leveldb" { path = "/var/lib/tessera" }

listener "tcp" {
  address     = "0.0.0.0:8200"
  # Plain HTTP: docker-compose.yml publishes this port on the host's 127.0.0.1 only. In
  # production, give tls_cert_file and tls_key_file and drop this line.
  tls_disable = true
}

# What secondaries and clients are told: the compose service name resolves on the compose network.
api_addr     = "http://dr-secondary:8200"
cluster_addr = "dr-secondary:8201"

license_path        = "/etc/tessera-license/license.json"
license_issuer_keys = ["@LICENSE_ISSUER_KEY@"]
log_level           = "info"

# The WAL tail kept for secondaries: a secondary that falls further behind than this
# reconciles (merkle-diff, merkle-sync) instead of streaming.
replication {
  wal_max_entries = 100000
  wal_max_bytes   = 268435456
}
