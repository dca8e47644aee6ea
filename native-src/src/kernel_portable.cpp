// The portable kernel: no x86 intrinsics, compiles for any CPU (ARM, old x86).
#include "kernel_common.hpp"

namespace cck {
namespace portable {
#define CCK_USE_BMI2 0
#include "ccheckers/kernel/engine.inl"
#include "ccheckers/kernel/kernel.inl"
#undef CCK_USE_BMI2
}  // namespace portable

std::unique_ptr<KernelApi> makePortableKernel(const Variant& v) { return portable::makeKernel(v, "portable"); }
}  // namespace cck
