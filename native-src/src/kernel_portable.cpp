// The portable kernel: no pext/pdep, compiles for any CPU (ARM, old x86), baseline code only. Where
// the CPU has a popcount instruction (every x86-64 since 2008, BMI2 or not; arm64), rankP2 uses it
// through a flag set at run time (see hardwarePopcount in engine.inl).
#include "kernel_common.hpp"

namespace cck {
namespace portable {
#define CCK_USE_BMI2 0
#include "ccheckers/kernel/engine.inl"
#include "ccheckers/kernel/kernel.inl"
#undef CCK_USE_BMI2
}  // namespace portable

std::unique_ptr<KernelApi> makePortableKernel(const Variant& v) { return portable::makeKernel(v, "portable", detectCpu().popcnt); }
std::unique_ptr<KernelApi> makeBaselinePortableKernel(const Variant& v) { return portable::makeKernel(v, "portable", false); }
}  // namespace cck
