# my-operator. `make test` is the one test command (README, .ci/run).
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
CTEST_ARGS ?=
JOBS ?= $(shell nproc)

.PHONY: all deps tools configure build test unit-test integration-test testenv-up testenv-down fmt lint clean

all: build

deps:
	hack/install-deps.sh

tools:
	hack/build-tools.sh

configure:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Installs packages, builds the pinned control plane (cached), builds, runs every test.
test: deps tools build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_ARGS)

unit-test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -L unit $(CTEST_ARGS)

integration-test: tools build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L integration $(CTEST_ARGS)

# A control plane for a person: prints the KUBECONFIG to use.
testenv-up: tools
	hack/testenv up

testenv-down:
	hack/testenv down

fmt:
	find src test bench -name '*.cpp' -o -name '*.h' | xargs clang-format -i

lint: configure
	find src -name '*.cpp' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR)
