# Berth's images for publishing to a registry, built from source in two stages:
#   docker build --target controller --build-arg REVISION=$(git rev-parse HEAD) \
#     -t registry.example.com/berth/controller:0.1.0 .
#   docker build --target shim --build-arg REVISION=$(git rev-parse HEAD) \
#     -t registry.example.com/berth/shim:0.1.0 .
#   docker push registry.example.com/berth/controller:0.1.0   (and the shim)
# then point manifests/ at them with an overlay's `images:` (see manifests/kustomization.yaml).
# Both targets share the builder stage: the second build reuses its cached layers. This pulls
# rust:1.95-bookworm and gcr.io/distroless/cc-debian12:nonroot and fetches crates, so it needs
# network access. Without a registry (the development machines here), `hack/images.sh berth
# release` builds the same layout — glibc, libgcc, CA bundle, user 65532 — FROM scratch out of
# the binaries `cargo build --release` left.

FROM rust:1.95-bookworm AS builder
WORKDIR /src
COPY . .
# The web console is embedded from the committed apiserver-shim/console/dist/: no Node here.
# Symbols stripped, as in the local images.
RUN CARGO_PROFILE_RELEASE_STRIP=symbols cargo build --release --locked \
      -p berth-controller -p berth-apiserver-shim --bin berth-controller --bin berth-shim \
 && mkdir -p /out/bin /out/data \
 && cp target/release/berth-controller target/release/berth-shim /out/bin/

FROM gcr.io/distroless/cc-debian12:nonroot AS shim
ARG REVISION=unknown
LABEL org.opencontainers.image.title=berth-shim org.opencontainers.image.revision=$REVISION
COPY --from=builder /out/bin/berth-shim /usr/bin/berth-shim
COPY --from=builder --chown=65532:65532 /out/data/ /var/lib/berth/
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
EXPOSE 7070
ENTRYPOINT ["/usr/bin/berth-shim"]

# The last stage is the default target: `docker build .` builds the controller.
FROM gcr.io/distroless/cc-debian12:nonroot AS controller
ARG REVISION=unknown
LABEL org.opencontainers.image.title=berth-controller org.opencontainers.image.revision=$REVISION
COPY --from=builder /out/bin/berth-controller /usr/bin/berth-controller
COPY --from=builder --chown=65532:65532 /out/data/ /var/lib/berth/
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
EXPOSE 9464
ENTRYPOINT ["/usr/bin/berth-controller"]
CMD ["run"]
