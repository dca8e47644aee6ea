// A solver table in the addon's memory (addon.cc: allocateTable), for core's TableBytes.
#pragma once

#include <napi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "args.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define CCHECKERS_MMAP 1
#endif

namespace cck_addon {

// allocateTable(bytes, viewBytes) -> {buffers: ArrayBuffer[], address, hugePagesAdvised}: a
// solver table of `bytes` zero bytes, of any size, as one mapping of anonymous memory aligned
// to 2 MiB and, where the OS has it, madvise(MADV_HUGEPAGE): with transparent huge pages in
// `madvise` mode the kernel then backs it with 2 MiB pages (fewer TLB misses in the passes'
// random reads, a faster first touch). JS gets it as external ArrayBuffers of `viewBytes` bytes
// each (the last one shorter): Node 20's N-API makes an external ArrayBuffer through a Buffer,
// at most 2^32 bytes. Each buffer's finalizer unmaps its own part. `address` (exact in a double:
// user addresses are below 2^53) finds the mapping in /proc/self/smaps.
inline Napi::Value allocateTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto sizeArg = [&](size_t i, double most) {
    const double d = info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : -1;
    if (!isIntegerIn(d, 1, most)) {
      throw Napi::RangeError::New(env, "allocateTable(bytes, viewBytes): sizes must be positive integers, views at most 2^32 bytes");
    }
    return static_cast<size_t>(d);
  };
  const size_t bytes = sizeArg(0, 9007199254740991.0);
  const size_t viewBytes = sizeArg(1, 4294967296.0);
  bool advised = false;
  Napi::Array buffers = Napi::Array::New(env);
#ifdef CCHECKERS_MMAP
  constexpr size_t kAlign = size_t{2} << 20;
  if (viewBytes % kAlign != 0 && viewBytes < bytes) throw Napi::RangeError::New(env, "allocateTable: views of a multiple of 2 MiB");
  const size_t mapped = (bytes + kAlign - 1) / kAlign * kAlign;
  void* raw = mmap(nullptr, mapped + kAlign, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
  if (raw == MAP_FAILED) throw Napi::Error::New(env, "out of memory: cannot map a table of " + std::to_string(bytes) + " bytes");
  // Keep the 2 MiB-aligned part: huge pages are aligned.
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kAlign - 1) / kAlign * kAlign;
  if (aligned > start) munmap(raw, aligned - start);
  munmap(reinterpret_cast<void*>(aligned + mapped), start + kAlign - aligned);  // never empty: aligned < start + kAlign
  uint8_t* data = reinterpret_cast<uint8_t*>(aligned);
#ifdef MADV_HUGEPAGE
  advised = madvise(data, mapped, MADV_HUGEPAGE) == 0;
#endif
  // Part at = [at, at + length) of the table, its mapping [at, at + its mapped bytes). V8 is
  // told of the memory (as of its own ArrayBuffers'), so that a table let go is collected soon.
  for (size_t at = 0, part = 0; at < bytes; at += viewBytes, part++) {
    const size_t length = std::min(viewBytes, bytes - at);
    auto* partMapped = new size_t(at + viewBytes >= bytes ? mapped - at : viewBytes);
    int64_t adjusted = 0;
    napi_adjust_external_memory(env, static_cast<int64_t>(*partMapped), &adjusted);
    buffers.Set(static_cast<uint32_t>(part), Napi::ArrayBuffer::New(
                                                env, data + at, length,
                                                [](Napi::Env env, void* p, size_t* size) {
                                                  munmap(p, *size);
                                                  int64_t left = 0;
                                                  napi_adjust_external_memory(env, -static_cast<int64_t>(*size), &left);
                                                  delete size;
                                                },
                                                partMapped));
  }
#else
  if (bytes > viewBytes) throw Napi::RangeError::New(env, "allocateTable: tables past one view need mmap");
  uint8_t* data = static_cast<uint8_t*>(std::calloc(bytes, 1));
  if (!data) throw Napi::Error::New(env, "out of memory: cannot allocate a table of " + std::to_string(bytes) + " bytes");
  buffers.Set(uint32_t{0}, Napi::ArrayBuffer::New(env, data, bytes, [](Napi::Env, void* p) { std::free(p); }));
#endif
  Napi::Object o = Napi::Object::New(env);
  o.Set("buffers", buffers);
  o.Set("address", static_cast<double>(reinterpret_cast<uintptr_t>(data)));
  o.Set("hugePagesAdvised", advised);
  return o;
}

}  // namespace cck_addon
