// N-API binding of the C++ engine (node-addon-api). Context-aware: all state lives in the Addon
// instance, so the addon loads in worker threads. Positions cross the boundary as Uint32Array
// words (p1[3], p2[3], toMove); batches (describe, bench, solver passes) are one call each.
// The module's exports: the Kernel class (kernel_object.hpp), allocateTable (table_memory.hpp),
// the message coding of band files, cpuInfo and the constants the TS core shares; arguments are
// read and checked by args.hpp.
#include <napi.h>

#include <stdexcept>
#include <string>

#include "args.hpp"
#include "ccheckers/kernel_api.hpp"
#include "ccheckers/message_runs.hpp"
#include "kernel_object.hpp"
#include "table_memory.hpp"

namespace cck_addon {
namespace {

// The binding's interface: raised with every change to what the exports take or offer, so the
// loader (loader.ts BINDING_INTERFACE) refuses an addon built from older sources by name
// instead of failing inside a solve. 2: solverSparsePass's memo, solverReleaseSparseMemo;
// 3: solverListUnknown, solverListedPass, solverReleaseUnknownLists.
constexpr int kBindingInterface = 3;

class Addon : public Napi::Addon<Addon> {
 public:
  Addon(Napi::Env env, Napi::Object exports) {
    // The constants the TS core keeps in step with the C++ (tests compare them).
    Napi::Object constants = Napi::Object::New(env);
    constants.Set("revisitLag", static_cast<double>(cck::kRevisitLag));
    constants.Set("benchSamples", cck::kBenchSamples);
    constants.Set("describeFields", cck::kDescribeFields);
    constants.Set("messageRunState", static_cast<double>(cck::kMessageRunState));
    constants.Set("noDistance", cck::kNoDistance);
    constants.Set("lostWithoutDistance", cck::kLostWithoutDistance);
    constants.Set("lostCheckedMarks", [&] {
      Napi::Array marks = Napi::Array::New(env, 2);
      for (uint32_t depth = 0; depth < 2; depth++) marks.Set(depth, cck::lostCheckedMark(static_cast<int>(depth)));
      return marks;
    }());
    constants.Set("maxDistance", cck::kMaxDistance);
    constants.Set("bindingInterface", kBindingInterface);
    DefineAddon(exports, {InstanceValue("Kernel", Kernel::Define(env)), InstanceMethod("cpuInfo", &Addon::CpuInfo),
                          InstanceMethod("encodeMessageRun", &Addon::EncodeMessageRun),
                          InstanceMethod("decodeMessageRuns", &Addon::DecodeMessageRuns),
                          InstanceMethod("allocateTable", &Addon::AllocateTable), InstanceValue("constants", constants)});
  }

 private:
  Napi::Value AllocateTable(const Napi::CallbackInfo& info) { return allocateTable(info); }
  // The message coding of band files: one call per run, or per piece of a file.
  Napi::Value EncodeMessageRun(const Napi::CallbackInfo& info) {
    size_t count = 0, length = 0;
    const double* messages = float64Arg(info, 0, count);
    uint8_t* bytes = bytesArg(info, 3, length);
    const size_t to = indexArg(info, 2, count);
    const size_t from = indexArg(info, 1, to);
    const size_t at = indexArg(info, 4, length);
    if (from == to || (length - at) / cck::kMaxNumberBytes < to - from + 2) {  // as core's encodeMessageRun
      throw Napi::RangeError::New(info.Env(), "message encoder: an empty run, or too few bytes for its worst case");
    }
    try {
      return Napi::Number::New(info.Env(), static_cast<double>(cck::encodeMessageRun(messages, from, to, bytes, at)));
    } catch (const std::invalid_argument& e) {
      throw Napi::RangeError::New(info.Env(), e.what());
    }
  }
  Napi::Value DecodeMessageRuns(const Napi::CallbackInfo& info) {
    size_t length = 0, capacity = 0;
    const uint8_t* bytes = bytesArg(info, 0, length);
    double* out = float64Arg(info, 2, capacity);
    double* state = runStateArg(info, 4);
    const size_t from = indexArg(info, 1, length);
    const size_t at = indexArg(info, 3, capacity);
    try {
      cck::decodeMessageRuns(bytes, from, length, out, at, capacity, state);
    } catch (const std::invalid_argument& e) {
      throw Napi::RangeError::New(info.Env(), e.what());
    }
    return info.Env().Undefined();
  }
  Napi::Value CpuInfo(const Napi::CallbackInfo& info) {
    cck::CpuInfo c = cck::detectCpu();
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("x86", c.x86);
    o.Set("bmi2", c.bmi2);
    o.Set("fastBmi2", c.fastBmi2);
    o.Set("popcnt", c.popcnt);
    o.Set("vendor", std::string(c.vendor));
    o.Set("family", c.family);
    return o;
  }
};

}  // namespace
}  // namespace cck_addon

using cck_addon::Addon;
NODE_API_ADDON(Addon)
