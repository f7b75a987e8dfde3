# syntax=docker/dockerfile:1
# my-operator image: a Debian 12 build stage with the -dev packages, and a slim Debian 12
# runtime stage with only the shared libraries the binary links (RUNTIME_PACKAGES), running
# as uid 65532. Build from the repository root:
#   docker build -t my-operator:0.1.0 --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
# Pin the base images by digest in release builds (debian:12@sha256:...).

# The Debian packages of the shared libraries my-operator links (ldd). The build stage
# fails if the binary needs a library outside this list, and
# test/integration/packaging/dockerfile_test.cpp checks the list against ldd of the build.
ARG RUNTIME_PACKAGES="libc6 libgcc-s1 libstdc++6 libssl3 zlib1g libzstd1 \
  libspdlog1.10 libfmt9 libyaml-cpp0.7 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
  libcivetweb1 libprotobuf32 libcbor0.8 ca-certificates"

FROM debian:12 AS build
ARG RUNTIME_PACKAGES
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake ninja-build pkg-config \
      libboost-dev rapidjson-dev libspdlog-dev prometheus-cpp-dev libcli11-dev catch2 \
      libssl-dev libyaml-cpp-dev libzstd-dev libprotobuf-dev protobuf-compiler libcbor-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the build reads (.dockerignore keeps build trees, caches and .git out).
COPY CMakeLists.txt ./
COPY cmake ./cmake
COPY third_party ./third_party
COPY src ./src
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
 && cmake --build /build --target my-operator \
 && strip --strip-unneeded /build/my-operator \
 && /build/my-operator --version
# Every shared library must come from a package of RUNTIME_PACKAGES.
RUN set -e; missing=""; \
    for library in $(ldd /build/my-operator | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'); do \
      package=$(dpkg -S "$library" 2>/dev/null || dpkg -S "$(readlink -f "$library")" 2>/dev/null || \
                dpkg -S "/usr$library" 2>/dev/null || true); \
      package=${package%%:*}; \
      case " $RUNTIME_PACKAGES " in *" $package "*) ;; *) missing="$missing $library(${package:-unknown})" ;; esac; \
    done; \
    if [ -n "$missing" ]; then echo "add to RUNTIME_PACKAGES:$missing" >&2; exit 1; fi

FROM debian:12-slim
ARG RUNTIME_PACKAGES
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $RUNTIME_PACKAGES \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*
COPY --from=build /build/my-operator /usr/local/bin/my-operator
# The same numeric uid:gid as the manifests' runAsUser/runAsGroup, so runAsNonRoot can
# verify it without a passwd entry.
USER 65532:65532
# /metrics: 8080 plain, or 8443 with --metrics-secure (the manifests' default); probes: 8081.
EXPOSE 8080 8443 8081
ENTRYPOINT ["/usr/local/bin/my-operator"]
LABEL org.opencontainers.image.title="my-operator" \
      org.opencontainers.image.description="Kubernetes operator that reconciles MyResource (myorg.io/v1alpha1) objects into Deployments" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://git.example.com/myorg/my-operator" \
      org.opencontainers.image.vendor="myorg" \
      org.opencontainers.image.base.name="debian:12-slim"
