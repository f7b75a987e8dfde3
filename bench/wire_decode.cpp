// wire_decode: what one object costs to decode in each encoding the API server sends it in, and the
// tree each builds (bench/README.md, "Wire formats").
//
//   wire_decode [--iterations N] FILE...
//
// Each FILE is one object as the API server answered a GET (bench/testdata/wire/: a Deployment and a
// MyResource, captured from the test control plane in JSON, protobuf and CBOR). The encoding is told by
// the first bytes ("k8s\0" protobuf, d9 d9 f7 CBOR, else JSON). Prints, per file: bytes on the wire,
// nanoseconds per decode (the best of five runs of N decodes), the tree's pool bytes and its
// member count, and the JSON text of the tree's canonical form's size (the same object decodes to the
// same tree whatever its encoding).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "kube/canonical_json.h"
#include "kube/cbor.h"
#include "kube/object.h"
#include "kube/protobuf.h"

namespace {

using myop::kube::Object;
using myop::kube::Result;

std::size_t count_values(const myop::kube::JsonValue& value) {
  std::size_t count = 1;
  if (value.IsObject()) {
    for (const auto& member : value.GetObject()) count += count_values(member.value);
  } else if (value.IsArray()) {
    for (const auto& item : value.GetArray()) count += count_values(item);
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 20000;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--iterations" && i + 1 < argc) {
      iterations = std::stoi(argv[++i]);
    } else {
      files.push_back(argument);
    }
  }
  if (files.empty()) {
    std::cerr << "usage: wire_decode [--iterations N] FILE...\n";
    return 2;
  }
  std::printf("%-44s %9s %8s %8s %7s %s\n", "file", "encoding", "bytes", "ns/obj", "values", "pool bytes");
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::cerr << "wire_decode: cannot read " << file << "\n";
      return 1;
    }
    const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::function<Result<Object>()> decode;
    std::string encoding;
    if (body.starts_with(std::string_view("k8s\0", 4))) {
      encoding = "protobuf";
      decode = [&] { return myop::kube::decode_protobuf_object(body, {.drop_managed_fields = true}); };
    } else if (body.starts_with("\xd9\xd9\xf7")) {
      encoding = "cbor";
      decode = [&] { return myop::kube::decode_cbor_object(body, /*drop_managed_fields=*/true); };
    } else {
      encoding = "json";
      decode = [&] {
        auto object = Object::parse(body);
        if (object) object->erase_managed_fields();
        return object;
      };
    }
    auto first = decode();
    if (!first) {
      std::cerr << "wire_decode: " << file << ": " << first.error().message << "\n";
      return 1;
    }
    double best = 1e18;
    for (int run = 0; run < 5; ++run) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) {
        auto object = decode();
        if (!object) return 1;
      }
      const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
      best = std::min(best, took.count() / iterations);
    }
    std::printf("%-44s %9s %8zu %8.0f %7zu %zu (canonical %zu)\n", file.c_str(), encoding.c_str(),
                body.size(), best, count_values(first->json()), first->allocated_bytes(),
                myop::kube::canonical_json(first->json()).size());
  }
  return 0;
}
