# The flyfs image: one binary with every role (flyfs mgmtd|metad|storaged|
# gateway|console|server|mount|admin|bench).
#
#   docker build -t flyfs .                              # engines: pebble, etcd, mem
#   docker build -t flyfs:fdb --build-arg TAGS=fdb .     # + FoundationDB (amd64)
#
# With TAGS=fdb the FoundationDB client library (libfdb_c, whose C API the Go
# bindings call through cgo) is installed from FoundationDB's release packages
# in the build stage and copied into the image.

ARG GO_VERSION=1.26
ARG DEBIAN_RELEASE=bookworm

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS build
ARG TAGS=""
ARG FDB_VERSION=7.3.43
ARG VERSION=dev
WORKDIR /src
RUN set -eux; mkdir -p /out/bin /out/lib; \
    if [ "${TAGS#*fdb}" != "$TAGS" ]; then \
        curl -fsSL -o /tmp/fdb-clients.deb \
            "https://github.com/apple/foundationdb/releases/download/${FDB_VERSION}/foundationdb-clients_${FDB_VERSION}-1_amd64.deb"; \
        dpkg -i /tmp/fdb-clients.deb; rm /tmp/fdb-clients.deb; \
        cp /usr/lib/libfdb_c.so /out/lib/; \
    fi
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# cgo only for FoundationDB; otherwise a static binary.
RUN set -eux; cgo=0; if [ "${TAGS#*fdb}" != "$TAGS" ]; then cgo=1; fi; \
    CGO_ENABLED=$cgo go build -trimpath -tags "$TAGS" -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/bin/flyfs ./cmd/flyfs; \
    /out/bin/flyfs version

FROM debian:${DEBIAN_RELEASE}-slim
# fuse3 for `flyfs mount`; ca-certificates for TLS endpoints.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates fuse3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/
RUN ldconfig && mkdir -p /data
WORKDIR /data
VOLUME /data
# mgmtd, storaged, metad, S3 gateway, console
EXPOSE 9000 9100 9200 9300 9400
ENTRYPOINT ["flyfs"]
CMD ["server", "--data", "/data", "--s3-addr", "0.0.0.0:9300", "--console-addr", "0.0.0.0:9400"]
