// The BMI2 kernel: hardware pext/pdep. Every function defined in this file after the pragma is
// compiled with target("bmi,bmi2,popcnt") (the pragma form of __attribute__((target(...)))), and
// lives in its own namespace, so no BMI2 code can be shared with the portable kernel by the
// linker. It is only ever called after detectCpu() has confirmed BMI2 (see cpu.cpp).
#include "kernel_common.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("bmi,bmi2,popcnt")
namespace cck {
namespace bmi2 {
#define CCK_USE_BMI2 1
#include "ccheckers/kernel/engine.inl"
#include "ccheckers/kernel/kernel.inl"
#undef CCK_USE_BMI2
}  // namespace bmi2
}  // namespace cck
#pragma GCC pop_options

namespace cck {
std::unique_ptr<KernelApi> makeBmi2Kernel(const Variant& v) { return bmi2::makeKernel(v, "bmi2"); }
}  // namespace cck
#else
namespace cck {
std::unique_ptr<KernelApi> makeBmi2Kernel(const Variant&) { return nullptr; }
}  // namespace cck
#endif
