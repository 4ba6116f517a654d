# syntax=docker/dockerfile:1
# The manager image: Node 24 on distroless (no shell, no package manager), non-root (uid 65532,
# the chart's runAsUser), production dependencies only.
#
# The code is TypeScript run through tsx in development; tsx is a devDependency, so the image
# does not run it. Instead the build stage bundles the product's entrypoint (cmd/advanced-daemonset:
# src/, controller/, webhook/, certs/; never e2e/ or bench/) into one ESM file with esbuild, the compiler tsx itself uses; npm packages stay
# external and come from `npm ci --omit=dev`. No TypeScript toolchain and no compile cache at
# runtime, so the root filesystem can stay read-only, and startup is faster.
#
#   docker build -t advanced-daemonset:0.1.0 .
#   docker run --rm advanced-daemonset:0.1.0 --help
#
# Without Docker, `npm run image` (hack/image/manager.ts) builds the same image and pushes it to a registry: it
# reads this file's final stage (ENV, USER, WORKDIR, EXPOSE, ENTRYPOINT, CMD; each COPY must be one it knows) and
# remakes the distroless base from the same Debian 12 packages. test/image.test.ts holds the two together.

ARG NODE_IMAGE=node:24-bookworm-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the `node` devDependency would download a second Node binary; the base image has one.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# One ESM file for our code, npm packages staying imports (hack/bundle.ts; the benchmark runs the same).
RUN node --import tsx hack/bundle.ts

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM ${RUNTIME_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
# As hack/bundle.ts NODE_RUNTIME_ENV (why: there).
ENV MALLOC_ARENA_MAX=2
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist

USER 65532:65532
# 9876 webhook (HTTPS), 8081 /healthz and /readyz, 8080 /metrics (WEBHOOK_PORT, HEALTH_PORT, METRICS_PORT in
# src/cli/common-flags.ts)
EXPOSE 9876 8081 8080
# Node flags as hack/bundle.ts NODE_RUNTIME_FLAGS (why: there). launch.mjs adds --max-old-space-size at 60%
# of the container's memory limit (cgroup), so V8 collects garbage before the kernel kills, then runs main.mjs.
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=4", "--no-maglev", "/app/dist/launch.mjs"]
CMD ["manager"]
