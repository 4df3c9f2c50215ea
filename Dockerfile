# syntax=docker/dockerfile:1
# A Tessera node. The config is mounted at /etc/tessera/tessera.hcl, the LevelDB lives in the
# /var/lib/tessera volume; 8200 is the API, 8201 the cluster (replication, gRPC mTLS) port.
#
#   docker build -t tessera:local .
#   docker run --rm -v $PWD/tessera.hcl:/etc/tessera/tessera.hcl:ro -v tessera-data:/var/lib/tessera \
#     -p 8200:8200 tessera:local
#   docker compose up -d        # a primary and a DR secondary: see docker-compose.yml and deploy/

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY proto ./proto
COPY src ./src
# Compile, then drop the dev dependencies (typescript, jest, ...) from what the runtime copies.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# dist/transport/grpc/proto.js loads ../../../proto/replication.proto at run time.
COPY proto ./proto
COPY bin ./bin
# `tessera` on PATH; main.js recognises itself through the symlink (realpath of argv[1]).
RUN chmod 0755 bin/tessera.js \
 && ln -s /app/bin/tessera.js /usr/local/bin/tessera \
 && mkdir -p /etc/tessera /etc/tessera-license /var/lib/tessera \
 && chown node:node /var/lib/tessera \
 && chmod 0700 /var/lib/tessera
# The image's unprivileged user (uid 1000); a new named volume at /var/lib/tessera inherits its ownership.
USER node
VOLUME ["/var/lib/tessera"]
EXPOSE 8200 8201
ENTRYPOINT ["tessera", "server", "-config", "/etc/tessera/tessera.hcl"]
