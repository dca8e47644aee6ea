// CPU detection with cpuid: popcnt, BMI2 present, and fast (AMD family 0x17, Zen 1/2, runs pext/pdep in
// slow microcode, so it counts as "no fast BMI2").
#include <cstring>

#include "ccheckers/kernel_api.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace cck {

CpuInfo detectCpu() {
  CpuInfo info;
#if defined(__x86_64__)
  info.x86 = true;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return info;
  unsigned maxLeaf = a;
  std::memcpy(info.vendor, &b, 4);
  std::memcpy(info.vendor + 4, &d, 4);
  std::memcpy(info.vendor + 8, &c, 4);
  info.vendor[12] = 0;
  __get_cpuid(1, &a, &b, &c, &d);
  unsigned baseFamily = (a >> 8) & 0xf;
  info.family = baseFamily == 0xf ? baseFamily + ((a >> 20) & 0xff) : baseFamily;
  info.popcnt = (c >> 23) & 1;
  if (maxLeaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    bool bmi1 = (b >> 3) & 1;
    info.bmi2 = bmi1 && ((b >> 8) & 1) && info.popcnt;
  }
  bool amdZen12 = std::strcmp(info.vendor, "AuthenticAMD") == 0 && info.family == 0x17;
  info.fastBmi2 = info.bmi2 && !amdZen12;
#elif defined(__aarch64__)
  info.popcnt = true;
#endif
  return info;
}

}  // namespace cck
