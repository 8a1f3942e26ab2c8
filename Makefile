# tsdb — the README's two commands are `make run` and `make test`.
#
# Everything needed is fetched by the go tool from the module proxy; nothing
# else has to be installed. pebblegozstd selects the pure-Go zstd inside pebble
# (no cgo compile of DataDog/zstd); it is set once here so build, vet, test and
# bench share one build cache.

GO      ?= go
GOFLAGS += -tags=pebblegozstd
export GOFLAGS
BIN     := bin/tsdb
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
# Extra flags for `make run`, e.g. make run ARGS="--servers 3".
ARGS    ?=
# Tests get a generous timeout: the race detector makes pebble ~7x slower.
TESTFLAGS ?= -race -timeout 25m

.PHONY: all build run test bench fuzz vet fmt etcdctl clean help

all: build

help:
	@echo "make run      start a local cluster (embedded etcd + servers on loopback; ARGS=... passes flags to 'tsdb dev')"
	@echo "make test     vet and run the whole test suite with -race (fuzz seed corpora included)"
	@echo "make build    build $(BIN)"
	@echo "make bench    run the benchmarks (storage ceiling, partition store, parsers, HTTP end to end)"
	@echo "make fuzz     run each fuzz target for FUZZTIME (default 30s)"
	@echo "make etcdctl  build an etcdctl matching the embedded etcd into ./bin"

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/tsdb

run: build
	./$(BIN) dev $(ARGS)

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w .

# The test suite runs the README's etcdctl line with the etcdctl built here.
test: vet bin/etcdctl
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@command -v influx >/dev/null || echo "note: the influx CLI is not installed: TestInfluxCLI skips (Debian: apt-get install influxdb-client)"
	TSDB_ETCDCTL=$(CURDIR)/bin/etcdctl $(GO) test $(TESTFLAGS) ./...
	@# The store's tests again without the memory head (tsdb server --memory-head=false);
	@# -count=1: the variable is read at package init, which go test's cache does not see.
	TSDB_TEST_MEMHEAD=0 $(GO) test $(TESTFLAGS) -count=1 ./partition/ ./replication/

# The ingest benchmark runs a fixed 2000 requests (2 M rows) per case so that
# the raw ceiling and the HTTP path write the same volume, flushes included.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./partition/ ./http/... ./metadata/
	$(GO) test -run '^$$' -bench BenchmarkIngest -benchtime 2000x -timeout 60m ./node/

FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLineProtocol$$' -fuzztime $(FUZZTIME) ./http/ingest/
	$(GO) test -run '^$$' -fuzz '^FuzzJSON$$' -fuzztime $(FUZZTIME) ./http/ingest/
	$(GO) test -run '^$$' -fuzz '^FuzzNDJSON$$' -fuzztime $(FUZZTIME) ./http/ingest/
	$(GO) test -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $(FUZZTIME) ./http/
	$(GO) test -run '^$$' -fuzz '^FuzzExecute$$' -fuzztime $(FUZZTIME) ./influx/

# etcdctl cannot be `go install`ed (its go.mod has replace directives), so it
# is built from a separate tools module that keeps its dependencies out of ours.
etcdctl: bin/etcdctl
bin/etcdctl: tools/go.mod
	cd tools && $(GO) build -o ../bin/etcdctl go.etcd.io/etcd/etcdctl/v3

clean:
	rm -rf bin
