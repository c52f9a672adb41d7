# kubectl mesh-explain
#
#   make run-example   build the plugin and explain the bundled Bookinfo example (no cluster needed)
#   make test          every test: unit, golden, scenario, end-to-end (real kube-apiserver + etcd)
#                      and conformance (the engines against Istio's own control-plane code)
#   make conformance   only the conformance module (separate go.mod requiring istio.io/istio)
#   make bench         performance benchmark against a real kube-apiserver
#   make golden        rewrite golden files (review the diff)
#   make fuzz          every fuzz target in turn, FUZZTIME each (default 30s; FUZZTIME=10m ...),
#                      FUZZMINIMIZETIME per new input kept (default 2s)
#   make release-check goreleaser check, a one-target snapshot release, the krew manifest
#                      rendered, validated and installed with krew (hack/release-check.sh)

GO      ?= go
BIN     := bin/kubectl-mesh_explain
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X github.com/mesh-explain/kubectl-mesh-explain/pkg/cli.Version=$(VERSION) -X github.com/mesh-explain/kubectl-mesh-explain/pkg/cli.Commit=$(COMMIT)

.PHONY: build run-example test unit e2e conformance conformance-update golden fuzz bench verify release-check clean

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kubectl-mesh_explain

run-example: build
	./$(BIN) cluster reviews -n bookinfo --from pod/productpage-v1 -f testdata/examples/bookinfo
	./$(BIN) authz pod/a -n foo -f testdata/examples/ambient
	./$(BIN) authz waypoint/waypoint -n bookinfo -f testdata/examples/waypoint

test: verify unit e2e conformance

unit:
	MESH_EXPLAIN_E2E= $(GO) test -count=1 ./...

e2e:
	hack/kube-env.sh install
	MESH_EXPLAIN_E2E=1 $(GO) test -count=1 -timeout 30m ./e2e/...

conformance:
	cd conformance && $(GO) test -count=1 -timeout 60m ./...

conformance-update:
	cd conformance && $(GO) test -count=1 -timeout 60m -run 'TestScenarios$$' . -update

golden:
	UPDATE_GOLDEN=1 $(GO) test -count=1 ./pkg/...

# FUZZ_TARGETS are package:Target pairs; `make test` runs their seed corpora as plain tests
# (and `make conformance` those of the conformance module's FuzzEngineAgreesWithIstio).
FUZZTIME     ?= 30s
# Go minimizes every new input the fuzzer keeps, for up to a minute by default, and counts no
# executions meanwhile: on inputs of a few kilobytes that was most of a run.
FUZZMINIMIZETIME ?= 2s
FUZZ_TARGETS := ./pkg/source:FuzzLoadBytes ./pkg/source:FuzzScanHeader ./pkg/source:FuzzBlockToJSON ./pkg/source:FuzzParseMeshConfig \
                ./pkg/source:FuzzOverlay ./pkg/source:FuzzLivePageJSON ./pkg/source:FuzzProtoList \
                ./pkg/render:FuzzRender ./pkg/render:FuzzSafe ./pkg/cli:FuzzArgs \
                ./pkg/check:FuzzEnginesAgreeWithCheck ./pkg/cli:FuzzScenarioCommand

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t##*:} ($${t%%:*}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) "$${t%%:*}"; \
	done
	@echo "== FuzzEngineAgreesWithIstio (conformance, $(FUZZTIME); the first run compiles Istio for fuzzing, minutes)"
	cd conformance && $(GO) test -run '^$$' -fuzz '^FuzzEngineAgreesWithIstio$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) .

bench:
	hack/bench.sh

release-check:
	hack/release-check.sh

verify:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) mod tidy -diff
	cd conformance && $(GO) mod tidy -diff
	hack/verify-imports.sh
	hack/verify-code-patterns.sh --citations=fail
	hack/update-readme.sh --check

clean:
	rm -rf bin dist
