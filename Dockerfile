# svc-vault in a container, on the official Bun image: the one-file server (`bun run build:server`)
# run as the image's unprivileged `bun` user, with its data in the /data volume.
#   docker build -t svc-vault .
#   docker run -d -p 127.0.0.1:3000:3000 -v svc-vault-data:/data \
#     -e SVC_MASTER_KEY_FILE=/run/secrets/master-key -v ./master-key:/run/secrets/master-key:ro svc-vault
# No container runtime is available where this is tested: the image is not built there. Each
# command below is one the test suite runs (test/platform/deploy.test.ts lists them), except the
# mkdir/chown that gives the volume to the `bun` user.
FROM oven/bun:1.4 AS build
WORKDIR /src
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile
COPY . .
RUN bun run build:server

FROM oven/bun:1.4-slim
COPY --from=build /src/dist/svc-vault /usr/local/bin/svc-vault
RUN mkdir -p /data && chown bun:bun /data
ENV HOST=0.0.0.0 PORT=3000 SVC_DATA_DIR=/data
VOLUME /data
USER bun
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["svc-vault", "healthcheck"]
ENTRYPOINT ["svc-vault"]
