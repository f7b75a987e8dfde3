#include "kube/packed_object.h"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createCDict_advanced, ZSTD_dct_rawContent (stable since 1.4)
#include <zstd.h>

#include <new>
#include <stdexcept>

namespace myop::kube {

namespace {

// Level 1: the dictionary does most of the work; higher levels saved a few bytes per object for
// more time. The tables are sized for objects of up to 16 KiB next to the dictionary.
constexpr int kLevel = 1;
constexpr unsigned long long kTypicalObjectSize = 16ULL * 1024;
constexpr unsigned long long kLargestObject = 64ULL * 1024 * 1024;

Error corrupt(std::string_view why) {
  return make_error(Reason::Unknown, "packed object is corrupt: " + std::string(why));
}

// One decompression context per thread, reused (it is reset by each call).
ZSTD_DCtx& thread_decompressor() {
  struct Owner {
    ZSTD_DCtx* context = ZSTD_createDCtx();
    Owner() {
      if (context == nullptr) throw std::bad_alloc();
    }
    ~Owner() { ZSTD_freeDCtx(context); }
    Owner(const Owner&) = delete;
    Owner& operator=(const Owner&) = delete;
  };
  thread_local Owner owner;
  return *owner.context;
}

}  // namespace

struct ObjectPacker::Dictionary {
  explicit Dictionary(std::string content) : text(std::move(content)) {
    const ZSTD_compressionParameters parameters = ZSTD_getCParams(kLevel, kTypicalObjectSize, text.size());
    compress = ZSTD_createCDict_advanced(text.data(), text.size(), ZSTD_dlm_byRef, ZSTD_dct_rawContent,
                                         parameters, ZSTD_defaultCMem);
    decompress = ZSTD_createDDict_advanced(text.data(), text.size(), ZSTD_dlm_byRef, ZSTD_dct_rawContent,
                                           ZSTD_defaultCMem);
    if (compress == nullptr || decompress == nullptr) {
      ZSTD_freeCDict(compress);
      ZSTD_freeDDict(decompress);
      throw std::bad_alloc();
    }
  }
  ~Dictionary() {
    ZSTD_freeCDict(compress);
    ZSTD_freeDDict(decompress);
  }
  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;

  const std::string text;  // referenced by both digested forms
  ZSTD_CDict* compress = nullptr;
  ZSTD_DDict* decompress = nullptr;
};

ObjectPacker::ObjectPacker() : compressor_(ZSTD_createCCtx()) {
  if (compressor_ == nullptr) throw std::bad_alloc();
}

ObjectPacker::~ObjectPacker() { ZSTD_freeCCtx(compressor_); }

std::string ObjectPacker::pack(const JsonValue& value) {
  std::string text = to_json_string(value);
  std::lock_guard lock(mutex_);
  if (dictionary_.load(std::memory_order_relaxed) == nullptr) {
    owned_dictionary_ = std::make_unique<const Dictionary>(text);
    dictionary_.store(owned_dictionary_.get(), std::memory_order_release);
  }
  scratch_.resize(ZSTD_compressBound(text.size()));
  const std::size_t size = ZSTD_compress_usingCDict(compressor_, scratch_.data(), scratch_.size(),
                                                    text.data(), text.size(), owned_dictionary_->compress);
  if (ZSTD_isError(size) != 0) throw std::logic_error(std::string("zstd: ") + ZSTD_getErrorName(size));
  return {scratch_.data(), size};
}

Result<std::string> ObjectPacker::unpack_text(std::string_view packed) const {
  const Dictionary* dictionary = dictionary_.load(std::memory_order_acquire);
  if (dictionary == nullptr) return corrupt("this packer never packed anything");
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return corrupt("no frame header");
  // No Kubernetes object comes near this (etcd refuses values over 1.5 MiB by default).
  if (size > kLargestObject) return corrupt("implausible size " + std::to_string(size));
  std::string text(size, '\0');
  const std::size_t written = ZSTD_decompress_usingDDict(
      &thread_decompressor(), text.data(), text.size(), packed.data(), packed.size(), dictionary->decompress);
  if (ZSTD_isError(written) != 0) return corrupt(ZSTD_getErrorName(written));
  if (written != size) return corrupt("short frame");
  return text;
}

Result<Object> ObjectPacker::unpack(std::string_view packed) const {
  auto text = unpack_text(packed);
  if (!text) return text.error();
  return Object::parse(*text);
}

std::size_t ObjectPacker::dictionary_size() const {
  const Dictionary* dictionary = dictionary_.load(std::memory_order_acquire);
  return dictionary == nullptr ? 0 : dictionary->text.size();
}

}  // namespace myop::kube
