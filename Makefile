# my-operator. `make test` is the one test command (README, .ci/run); `make demo` runs it.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
CTEST_ARGS ?=
JOBS ?= $(shell nproc)
# ctest: the two lanes of integration tests (test/CMakeLists.txt), each one test at a time on its own
# control plane, plus one slot for the tests that need none (unit, third-party), which would
# otherwise wait for a lane to finish.
CTEST_JOBS ?= 3
NAMESPACE ?= my-operator-system
# Evaluated in the recipes that use it only (it may build helm).
HELM = "$$(hack/build-tools.sh --print-bin-dir helm)/helm"
# The control plane's version (hack/tools/versions.env): helm lints the chart against it.
KUBERNETES_VERSION := $(shell sed -n 's/^KUBERNETES_VERSION=//p' hack/tools/versions.env)

.PHONY: all deps tools configure build test unit-test integration-test e2e run demo demo-down demo-fleet \
        demo-fleet-down \
        deploy undeploy helm-lint bench fuzz sbom scan testenv-up testenv-down fmt check-format lint \
        sanitize asan tsan asan-operator clean fresh-check test-ctest

all: build

deps:
	hack/timed deps hack/install-deps.sh

tools:
	hack/timed tools hack/build-tools.sh

configure:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	hack/timed build cmake --build $(BUILD_DIR) -j $(JOBS)

# Installs packages, checks the format, builds, lints, runs the unit tests under sanitizers, then
# every test: unit, integration (real control plane) and the chainsaw e2e stories. The cheap checks
# come first so a mistake fails in seconds. The pinned Go tools (cached) build in the background
# meanwhile, at the lowest priority (hack/with-background-tools): ctest waits for the control plane's,
# and a test that needs another waits for its build. Each step says how long it took (hack/timed);
# .ci/run prints the list at the end (hack/ci-summary).
test: deps check-format
	hack/with-background-tools $(MAKE) --no-print-directory build lint sanitize test-ctest

# (make test's last step) The control plane's tools, then ctest (a test that needs another tool waits
# for its build: hack/with-background-tools).
test-ctest:
	hack/timed control-plane-tools hack/build-tools.sh etcd kubernetes kwok
	hack/timed ctest ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(CTEST_JOBS) $(CTEST_ARGS)

unit-test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -L unit $(CTEST_ARGS)

integration-test: tools build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L integration $(CTEST_ARGS)

e2e: tools build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -R '^e2e' $(CTEST_ARGS)

# The operator against $KUBECONFIG (or ~/.kube/config, or in-cluster), in the foreground.
run: build
	$(BUILD_DIR)/my-operator --log-format text

# The README's run command: local control plane (unless KUBECONFIG is set), chart, operator, sample.
demo: deps tools build
	hack/demo.sh $(BUILD_DIR)/my-operator

demo-down:
	hack/demo.sh --down

# The same operator as the hub of a fleet: two more local control planes as members
# (docs/multicluster.md). demo-fleet-down stops them all.
demo-fleet: deps tools build
	hack/demo.sh --fleet $(BUILD_DIR)/my-operator

demo-fleet-down: demo-down

# Installs the chart into the cluster of $KUBECONFIG (the image must be pullable there).
deploy: tools
	$(HELM) upgrade --install my-operator charts/my-operator --namespace $(NAMESPACE) --create-namespace

undeploy: tools
	$(HELM) uninstall my-operator --namespace $(NAMESPACE)

helm-lint: tools
	$(HELM) lint --strict --kube-version $(KUBERNETES_VERSION) charts/my-operator

# CI as on a new machine: a clone of HEAD with empty Go caches, no .cache/, no compiler cache;
# prints each phase's time (hack/fresh-check). FRESH_CHECK_ARGS=--warm adds a second, warm run.
FRESH_CHECK_ARGS ?=
fresh-check:
	hack/fresh-check $(FRESH_CHECK_ARGS)

# Benchmarks (bench/README.md; `make test` runs only their smoke runs). BENCH_ARGS="--n 50 --idle-seconds 30" for a quick look.
BENCH_ARGS ?=
bench: tools build
	bench/run $(BENCH_ARGS)

fuzz:
	hack/fuzz.sh

sbom: build tools
	hack/sbom.sh $(BUILD_DIR)/my-operator

scan: sbom
	hack/scan.sh $(BUILD_DIR)/sbom/my-operator.spdx.json

# A control plane for a person: prints the KUBECONFIG to use.
testenv-up: tools
	hack/testenv up

testenv-down:
	hack/testenv down

# clang-format 14 with .clang-format over src/ test/ bench/ examples/: check-format fails on a
# difference (and prints the command that fixes it); fmt rewrites the files.
check-format:
	hack/timed check-format hack/check-format

fmt:
	hack/check-format --fix

# clang-tidy 14 with .clang-tidy over src/, from the build's compile_commands.json; any finding fails.
lint: configure
	hack/timed lint hack/lint --build-dir $(BUILD_DIR) --jobs $(JOBS)

# The unit tests built and run under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) and
# ThreadSanitizer (build-tsan/); any report fails. See hack/sanitize.
sanitize: asan tsan

asan:
	hack/timed asan hack/sanitize asan --jobs $(JOBS)

tsan:
	hack/timed tsan hack/sanitize tsan --jobs $(JOBS)

# The operator built with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) under the
# MyResource integration tests on a control plane of its own; any report fails. Not in `make test`:
# its duration is not measured yet. See hack/sanitize-operator.
asan-operator: tools
	hack/sanitize-operator --jobs $(JOBS)

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan
