# flyfs build, test and run targets. `make run` and `make test` are the two
# set-up commands of the README; CI runs `make test` through .ci/run.
GO      ?= go
BIN     ?= bin/flyfs
DATA    ?= flyfs-data
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: build test run bench fuzz clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/flyfs

# The whole suite: vet, then every test with the race detector (the shared-state
# packages are the point of it), including the real-etcd and Pebble crash tests.
test:
	./scripts/test-deps.sh
	./scripts/check-compose.sh
	$(GO) vet ./...
	GO=$(GO) ./scripts/gotest.sh

# Run flyfs on its embedded default (Pebble) with its state under $(DATA).
run: build
	$(BIN) server --data $(DATA)

# Every comparison of a part against its baseline (bench/vs/...). fuse needs
# root and /dev/fuse; the whole run takes a while and needs some GiB of disk.
bench: build
	$(BIN) bench kv
	$(BIN) bench rpc
	$(BIN) bench engine
	$(BIN) bench storage
	$(BIN) bench recovery
	$(BIN) bench meta
	$(BIN) bench fuse
	$(BIN) bench s3-gateway

# The gateway's parsers, the console's JSON bodies and the RPC request
# handlers of metad, storaged and mgmtd (each against an in-process server)
# run for a count of inputs (about 10 s each), not a duration: go1.26's
# -fuzztime deadline can fail a clean run (golang/go#75804).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReadFrame -fuzztime 60s ./core/rpc
	$(GO) test -run '^$$' -fuzz '^FuzzParseRange$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzCopySource$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzParseCopyRange$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalQuery$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzTagsFromHeader$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzCORSConfig$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzPostPolicy$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzBucketPolicy$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzLifecycle$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzACL$$' -fuzztime 50000x ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzConsoleJSON$$' -fuzztime 50000x ./console
	$(GO) test -run '^$$' -fuzz '^FuzzMetadHandlers$$' -fuzztime 50000x ./metad
	$(GO) test -run '^$$' -fuzz '^FuzzStoragedHandlers$$' -fuzztime 50000x ./storaged
	$(GO) test -run '^$$' -fuzz '^FuzzMgmtdHandlers$$' -fuzztime 50000x ./mgmtd

clean:
	rm -rf bin
