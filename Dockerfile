# A Tessera node. 8200 is the API, 8201 the cluster (replication, gRPC mTLS) port. The command
# defaults to `tessera server -config /etc/tessera/tessera.hcl`; a LevelDB node keeps its data in
# /var/lib/tessera (mount a volume there: the image declares none, so nothing anonymous is left behind).
#
#   docker build --network host -t tessera:local .
#   docker run --rm -v $PWD/tessera.hcl:/etc/tessera/tessera.hcl:ro -v tessera-data:/var/lib/tessera \
#     -p 127.0.0.1:8200:8200 tessera:local
#
# docker-compose.yml builds this image once (as tessera:local, on its `setup` service) for every
# node of its cluster; README.md, section "Running in containers (docker-compose)".

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
# The image's unprivileged user (uid 1000). A new named volume mounted at /var/lib/tessera is
# filled from this directory, so it starts owned by node with mode 0700.
USER node
EXPOSE 8200 8201
ENTRYPOINT ["tessera"]
CMD ["server", "-config", "/etc/tessera/tessera.hcl"]
