// The compact form objects take in a cache: their JSON text compressed with Zstandard against a
// dictionary, the text of the first object packed.
//
// A parsed object costs its RapidJSON tree: 16 bytes per value, 32 per member, every string longer
// than 13 bytes copied; a Deployment as the API server sends it (managedFields dropped) takes about
// 4.3 KiB of tree, a MyResource about 2 KiB. Objects of one kind in one cache are nearly the same
// text (the same keys, defaults, images, condition messages), so compressing each against the first
// one keeps little more than what differs. Packing costs about as much as serializing the object,
// unpacking far less than the parse that follows (bench/README.md, "Cache memory").
//
// Thread safety: pack() serializes on the packer's own mutex (one compression context); unpack() may
// run on any number of threads at once (each thread keeps one decompression context). The dictionary
// is chosen by the first pack() and never changes, so every packed form stays readable for the
// packer's lifetime. A packed form is readable only by the packer that made it.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "kube/errors.h"
#include "kube/object.h"

struct ZSTD_CCtx_s;  // zstd.h's ZSTD_CCtx

namespace myop::kube {

class ObjectPacker {
 public:
  ObjectPacker();
  ~ObjectPacker();
  ObjectPacker(const ObjectPacker&) = delete;
  ObjectPacker& operator=(const ObjectPacker&) = delete;

  // The packed form of `value` (normally an object).
  std::string pack(const JsonValue& value);
  // The JSON text a packed form holds.
  Result<std::string> unpack_text(std::string_view packed) const;
  // The object a packed form holds, in a tightly sized pool.
  Result<Object> unpack(std::string_view packed) const;

  // Bytes of the dictionary (0 until the first pack()).
  std::size_t dictionary_size() const;

 private:
  struct Dictionary;

  std::mutex mutex_;  // guards compressor_, scratch_ and the one assignment of the dictionary
  ::ZSTD_CCtx_s* compressor_;
  std::string scratch_;
  std::unique_ptr<const Dictionary> owned_dictionary_;
  // Set once, under mutex_, by the first pack() (release); read without the lock (acquire).
  std::atomic<const Dictionary*> dictionary_{nullptr};
};

}  // namespace myop::kube
