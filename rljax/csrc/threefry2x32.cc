// Threefry-2x32 (20 rounds) as an XLA:CPU FFI kernel, bit for bit jax's own lowering.
//
// jax lowers every random draw on CPU to a 5-iteration while loop that XLA compiles separately
// at each call site (several fused kernels per site); this kernel replaces the loop with one
// custom call. rljax.prng_kernel builds this file on first use and registers it. Operands:
// key1, key2 (one element each, or one per output element), count1, count2 (one per output
// element); results: the two output words, as jax's threefry2x32 primitive.

#include <cstddef>
#include <cstdint>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define RLJAX_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef RLJAX_CLONES
#define RLJAX_CLONES
#endif

namespace {

constexpr uint32_t kParity = 0x1BD11BDAu;  // Threefish's key-schedule constant

inline uint32_t RotateLeft(uint32_t v, uint32_t d) { return (v << d) | (v >> (32 - d)); }

// Four rounds of mix (a += b; b = rotl(b, r) ^ a), then the key injection after them.
#define RLJAX_FOUR_ROUNDS(r0, r1, r2, r3, inject_a, inject_b, step) \
  a += b;                                                            \
  b = RotateLeft(b, r0) ^ a;                                         \
  a += b;                                                            \
  b = RotateLeft(b, r1) ^ a;                                         \
  a += b;                                                            \
  b = RotateLeft(b, r2) ^ a;                                         \
  a += b;                                                            \
  b = RotateLeft(b, r3) ^ a;                                         \
  a += inject_a;                                                     \
  b += inject_b + step;

// The 20 rounds on one counter pair (a, b), already offset by the first key injection.
#define RLJAX_HASH(k0, k1, k2)                           \
  RLJAX_FOUR_ROUNDS(13, 15, 26, 6, k1, k2, 1u)           \
  RLJAX_FOUR_ROUNDS(17, 29, 16, 24, k2, k0, 2u)          \
  RLJAX_FOUR_ROUNDS(13, 15, 26, 6, k0, k1, 3u)           \
  RLJAX_FOUR_ROUNDS(17, 29, 16, 24, k1, k2, 4u)          \
  RLJAX_FOUR_ROUNDS(13, 15, 26, 6, k2, k0, 5u)

// One key for all n counters (a draw from one key: the common case).
RLJAX_CLONES void HashOneKey(size_t n, uint32_t k0, uint32_t k1, const uint32_t* __restrict x0,
                             const uint32_t* __restrict x1, uint32_t* __restrict y0,
                             uint32_t* __restrict y1) {
  const uint32_t k2 = k0 ^ k1 ^ kParity;
  for (size_t i = 0; i < n; ++i) {
    uint32_t a = x0[i] + k0, b = x1[i] + k1;
    RLJAX_HASH(k0, k1, k2)
    y0[i] = a;
    y1[i] = b;
  }
}

// A key per counter (vmapped draws, key splits).
RLJAX_CLONES void HashKeyEach(size_t n, const uint32_t* __restrict key0,
                              const uint32_t* __restrict key1, const uint32_t* __restrict x0,
                              const uint32_t* __restrict x1, uint32_t* __restrict y0,
                              uint32_t* __restrict y1) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k0 = key0[i], k1 = key1[i], k2 = k0 ^ k1 ^ kParity;
    uint32_t a = x0[i] + k0, b = x1[i] + k1;
    RLJAX_HASH(k0, k1, k2)
    y0[i] = a;
    y1[i] = b;
  }
}

ffi::Error Threefry2x32(ffi::Buffer<ffi::U32> key0, ffi::Buffer<ffi::U32> key1,
                        ffi::Buffer<ffi::U32> count0, ffi::Buffer<ffi::U32> count1,
                        ffi::ResultBuffer<ffi::U32> out0, ffi::ResultBuffer<ffi::U32> out1) {
  const size_t n = out0->element_count();
  const size_t keys = key0.element_count();
  if (count0.element_count() != n || count1.element_count() != n ||
      out1->element_count() != n || key1.element_count() != keys || (keys != 1 && keys != n)) {
    return ffi::Error::InvalidArgument(
        "rljax_threefry2x32: counts and results must have one size, the keys that size or one");
  }
  if (keys == 1) {
    HashOneKey(n, key0.typed_data()[0], key1.typed_data()[0], count0.typed_data(),
               count1.typed_data(), out0->typed_data(), out1->typed_data());
  } else {
    HashKeyEach(n, key0.typed_data(), key1.typed_data(), count0.typed_data(),
                count1.typed_data(), out0->typed_data(), out1->typed_data());
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(RljaxThreefry2x32, Threefry2x32,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>());
