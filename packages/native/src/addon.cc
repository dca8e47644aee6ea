// N-API binding of the C++ engine (node-addon-api). Context-aware: all state lives in the Addon
// instance, so the addon loads in worker threads. Positions cross the boundary as Uint32Array
// words (p1[3], p2[3], toMove); batches (describe, bench, solver passes) are one call each.
#include <napi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "ccheckers/kernel_api.hpp"
#include "ccheckers/message_runs.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define CCHECKERS_MMAP 1
#endif

namespace {

using cck::KernelApi;
using cck::PosWords;

const uint32_t* wordsArg(const Napi::CallbackInfo& info, size_t i, size_t minLength) {
  if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a Uint32Array");
  }
  auto a = info[i].As<Napi::Uint32Array>();
  if (a.ElementLength() < minLength) throw Napi::RangeError::New(info.Env(), "Uint32Array argument too short");
  return a.Data();
}

uint32_t* outWords(const Napi::CallbackInfo& info, size_t i, size_t minLength) { return const_cast<uint32_t*>(wordsArg(info, i, minLength)); }

PosWords position(const Napi::CallbackInfo& info, size_t i) {
  const uint32_t* w = wordsArg(info, i, 7);
  PosWords p;
  for (int j = 0; j < 3; j++) {
    p.p1[j] = w[j];
    p.p2[j] = w[3 + j];
  }
  p.toMove = w[6] ? 1 : 0;
  return p;
}

uint8_t* bytesArg(const Napi::CallbackInfo& info, size_t i, size_t& length) {
  if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a Uint8Array");
  }
  auto a = info[i].As<Napi::Uint8Array>();
  length = a.ElementLength();
  return a.Data();
}

// A solver table or distance table (core's TableLike): a Uint8Array, or a TableBytes, whose
// bytes are one block of memory of any size (past the 4 GiB a typed array spans) seen through its
// `views`, which must be adjacent: the pointer of the first and the sum of their lengths.
uint8_t* tableArg(const Napi::CallbackInfo& info, size_t i, size_t& length) {
  if (info[i].IsTypedArray()) return bytesArg(info, i, length);
  const std::string what = "argument " + std::to_string(i) + " must be a Uint8Array or a TableBytes";
  if (!info[i].IsObject()) throw Napi::TypeError::New(info.Env(), what);
  Napi::Value views = info[i].As<Napi::Object>().Get("views");
  if (!views.IsArray() || views.As<Napi::Array>().Length() == 0) throw Napi::TypeError::New(info.Env(), what);
  Napi::Array list = views.As<Napi::Array>();
  uint8_t* first = nullptr;
  length = 0;
  for (uint32_t v = 0; v < list.Length(); v++) {
    Napi::Value view = list.Get(v);
    if (!view.IsTypedArray() || view.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) throw Napi::TypeError::New(info.Env(), what);
    auto bytes = view.As<Napi::Uint8Array>();
    if (v == 0) first = bytes.Data();
    if (bytes.Data() != first + length) {
      throw Napi::RangeError::New(info.Env(), "argument " + std::to_string(i) + ": the views of a TableBytes are not adjacent in memory");
    }
    length += bytes.ElementLength();
  }
  return first;
}

double* float64Arg(const Napi::CallbackInfo& info, size_t i, size_t& length) {
  if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a Float64Array");
  }
  auto a = info[i].As<Napi::Float64Array>();
  length = a.ElementLength();
  return a.Data();
}

// The message coding of band files (message_runs.hpp; core's message-runs.ts checks the
// arguments' ranges the same way): an index of an array of `limit` elements (or its end), and a
// decoder's state.
size_t indexArg(const Napi::CallbackInfo& info, size_t i, size_t limit) {
  const double x = info[i].As<Napi::Number>().DoubleValue();
  if (!(x >= 0 && x <= static_cast<double>(limit) && x == static_cast<double>(static_cast<size_t>(x)))) {
    throw Napi::RangeError::New(info.Env(), "message coding: an argument is not an index of its array");
  }
  return static_cast<size_t>(x);
}

double* runStateArg(const Napi::CallbackInfo& info, size_t i) {
  size_t length = 0;
  double* state = float64Arg(info, i, length);
  if (length != cck::kMessageRunState) throw Napi::RangeError::New(info.Env(), "message decoder: a state of the wrong length");
  return state;
}

// Runs a call into the native solver: what its threads throw becomes a JS error (an exception
// escaping through N-API terminates Node): a RangeError for bad input, out of memory, or any other
// (std::system_error when a thread cannot start, ...).
template <class Call>
Napi::Value solverCall(Napi::Env env, Call&& call) {
  try {
    return call();
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  } catch (const std::bad_alloc&) {
    throw Napi::Error::New(env, "out of memory in the native solver");
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, std::string("native solver: ") + e.what());
  }
}

// A unit number (group or P2 placement): an integer in 0 .. 2^32 - 1. Uint32Value() would wrap
// 2^32 + 5 to 5 and run the kernel on the wrong units, so anything else is a RangeError.
uint32_t unitArg(const Napi::CallbackInfo& info, size_t i) {
  if (!info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a unit number");
  double d = info[i].As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 4294967295.0) || d != static_cast<double>(static_cast<uint64_t>(d))) {
    throw Napi::RangeError::New(info.Env(), "unit " + std::to_string(d) + " is not an integer from 0 to 2^32 - 1");
  }
  return static_cast<uint32_t>(d);
}

Napi::Object statsObject(Napi::Env env, const cck::KernelStats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("wins", static_cast<double>(s.wins));
  o.Set("losses", static_cast<double>(s.losses));
  o.Set("illegal", static_cast<double>(s.illegal));
  o.Set("terminal", static_cast<double>(s.terminal));
  o.Set("moveless", static_cast<double>(s.moveless));
  return o;
}

class Kernel : public Napi::ObjectWrap<Kernel> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Kernel",
                       {
                           InstanceMethod<&Kernel::Moves>("moves"),
                           InstanceMethod<&Kernel::LegalMoves>("legalMoves"),
                           InstanceMethod<&Kernel::HasWon>("hasWon"),
                           InstanceMethod<&Kernel::IsIllegal>("isIllegal"),
                           InstanceMethod<&Kernel::IsTerminal>("isTerminal"),
                           InstanceMethod<&Kernel::RankP1>("rankP1"),
                           InstanceMethod<&Kernel::UnrankP1>("unrankP1"),
                           InstanceMethod<&Kernel::RankP2>("rankP2"),
                           InstanceMethod<&Kernel::UnrankP2>("unrankP2"),
                           InstanceMethod<&Kernel::NextP2>("nextP2"),
                           InstanceMethod<&Kernel::Mirror>("mirror"),
                           InstanceMethod<&Kernel::Rotate>("rotate"),
                           InstanceMethod<&Kernel::Canonical>("canonical"),
                           InstanceMethod<&Kernel::Describe>("describe"),
                           InstanceMethod<&Kernel::Bench>("bench"),
                           InstanceMethod<&Kernel::SolverInit>("solverInit"),
                           InstanceMethod<&Kernel::SolverPass>("solverPass"),
                           InstanceMethod<&Kernel::SolverSparsePass>("solverSparsePass"),
                           InstanceMethod<&Kernel::SolverDistanceInit>("solverDistanceInit"),
                           InstanceMethod<&Kernel::SolverDistanceLayer>("solverDistanceLayer"),
                           InstanceMethod<&Kernel::SolverBand>("solverBand"),
                           InstanceMethod<&Kernel::SolverBandApplyRuns>("solverBandApplyRuns"),
                           InstanceMethod<&Kernel::SolverGroups>("solverGroups"),
                           InstanceMethod<&Kernel::SolverPassUnits>("solverPassUnits"),
                       });
  }

  // new Kernel(size, pieces, rules (0 clean, 1 published), startCells: number[], kernel: 'bmi2' | 'portable')
  explicit Kernel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Kernel>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 5) throw Napi::TypeError::New(env, "Kernel(size, pieces, rules, startCells, kernel)");
    int size = info[0].As<Napi::Number>().Int32Value();
    int pieces = info[1].As<Napi::Number>().Int32Value();
    auto rules = info[2].As<Napi::Number>().Int32Value() == 1 ? cck::RuleMode::Published : cck::RuleMode::Clean;
    Napi::Array cells = info[3].As<Napi::Array>();
    std::vector<int> start;
    for (uint32_t i = 0; i < cells.Length(); i++) start.push_back(cells.Get(i).As<Napi::Number>().Int32Value());
    std::string which = info[4].As<Napi::String>().Utf8Value();
    try {
      cck::Variant v(size, pieces, rules, start);
      if (which == "bmi2") {
        // Never run BMI2 code on a CPU without it (SIGILL): the check is here, not only in JS.
        if (!cck::detectCpu().bmi2) throw Napi::Error::New(env, "this CPU has no BMI2");
        kernel_ = cck::makeBmi2Kernel(v);
        if (!kernel_) throw Napi::Error::New(env, "the BMI2 kernel is not compiled for this architecture");
      } else if (which == "portable") {
        kernel_ = cck::makePortableKernel(v);
      } else if (which == "portable-baseline") {
        kernel_ = cck::makeBaselinePortableKernel(v);
      } else {
        throw Napi::TypeError::New(env, "kernel must be 'bmi2', 'portable' or 'portable-baseline'");
      }
      moves_.resize(2 * static_cast<size_t>(v.cells) * pieces + 2);
    } catch (const std::invalid_argument& e) {
      throw Napi::RangeError::New(env, e.what());
    }
  }

 private:
  std::unique_ptr<KernelApi> kernel_;
  std::vector<uint8_t> moves_;

  Napi::Value MovesInto(const Napi::CallbackInfo& info, bool legal) {
    PosWords p = position(info, 0);
    int n = legal ? kernel_->legalMoves(p, moves_.data()) : kernel_->moves(p, moves_.data());
    auto out = Napi::Uint8Array::New(info.Env(), 2 * static_cast<size_t>(n));
    std::copy(moves_.begin(), moves_.begin() + 2 * n, out.Data());
    return out;
  }
  Napi::Value Moves(const Napi::CallbackInfo& info) { return MovesInto(info, false); }
  Napi::Value LegalMoves(const Napi::CallbackInfo& info) { return MovesInto(info, true); }
  Napi::Value HasWon(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), kernel_->hasWon(info[0].As<Napi::Number>().Int32Value(), position(info, 1)));
  }
  Napi::Value IsIllegal(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), kernel_->isIllegal(position(info, 0))); }
  Napi::Value IsTerminal(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), kernel_->isTerminal(position(info, 0))); }
  Napi::Value RankP1(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(kernel_->rankP1(wordsArg(info, 0, 3))));
  }
  Napi::Value UnrankP1(const Napi::CallbackInfo& info) {
    kernel_->unrankP1(static_cast<uint64_t>(info[0].As<Napi::Number>().DoubleValue()), outWords(info, 1, 3));
    return info.Env().Undefined();
  }
  Napi::Value RankP2(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(kernel_->rankP2(wordsArg(info, 0, 3), wordsArg(info, 1, 3))));
  }
  Napi::Value UnrankP2(const Napi::CallbackInfo& info) {
    kernel_->unrankP2(wordsArg(info, 0, 3), static_cast<uint64_t>(info[1].As<Napi::Number>().DoubleValue()), outWords(info, 2, 3));
    return info.Env().Undefined();
  }
  Napi::Value NextP2(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), kernel_->nextP2(wordsArg(info, 0, 3), wordsArg(info, 1, 3), outWords(info, 2, 3)));
  }
  Napi::Value Mirror(const Napi::CallbackInfo& info) {
    kernel_->mirror(wordsArg(info, 0, 3), outWords(info, 1, 3));
    return info.Env().Undefined();
  }
  Napi::Value Rotate(const Napi::CallbackInfo& info) {
    kernel_->rotate(wordsArg(info, 0, 3), outWords(info, 1, 3));
    return info.Env().Undefined();
  }
  Napi::Value Canonical(const Napi::CallbackInfo& info) {
    PosWords out;
    kernel_->canonical(position(info, 0), out);
    uint32_t* w = outWords(info, 1, 7);
    for (int j = 0; j < 3; j++) {
      w[j] = out.p1[j];
      w[3 + j] = out.p2[j];
    }
    w[6] = 0;
    return info.Env().Undefined();
  }
  // describe(words: Uint32Array (7 per position), count, out: Float64Array (kDescribeFields per position))
  Napi::Value Describe(const Napi::CallbackInfo& info) {
    size_t count = info[1].As<Napi::Number>().Uint32Value();
    const uint32_t* words = wordsArg(info, 0, 7 * count);
    auto out = info[2].As<Napi::Float64Array>();
    if (out.ElementLength() < count * cck::kDescribeFields) throw Napi::RangeError::New(info.Env(), "describe: output too short");
    kernel_->describe(words, count, out.Data());
    return info.Env().Undefined();
  }
  // bench(op index, position words, iterations) -> { nanoseconds, checksum }
  Napi::Value Bench(const Napi::CallbackInfo& info) {
    int op = info[0].As<Napi::Number>().Int32Value();
    if (op < 0 || op > static_cast<int>(cck::BenchOp::IncrementP2)) throw Napi::RangeError::New(info.Env(), "unknown bench op");
    auto r = kernel_->bench(static_cast<cck::BenchOp>(op), position(info, 1), static_cast<uint64_t>(info[2].As<Napi::Number>().DoubleValue()));
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("nanoseconds", r.nanoseconds);
    o.Set("checksum", static_cast<double>(r.checksum));
    return o;
  }
  enum class Phase { Init, Pass, Sparse, DistanceInit, DistanceLayer };
  // solverInit(table, from, to, threads); solverPass(table, from, to, threads);
  // solverSparsePass(table, from, to, threads, descending);
  // solverDistanceInit(table, distances, from, to, threads); solverDistanceLayer(table, distances, depth, from, to, threads)
  Napi::Value Solver(const Napi::CallbackInfo& info, Phase phase) {
    size_t bytes = 0, distanceBytes = 0;
    uint8_t* table = tableArg(info, 0, bytes);
    size_t arg = 1;
    uint8_t* distances = nullptr;
    int depth = 0;
    if (phase == Phase::DistanceInit || phase == Phase::DistanceLayer) distances = tableArg(info, arg++, distanceBytes);
    if (phase == Phase::DistanceLayer) depth = info[arg++].As<Napi::Number>().Int32Value();
    uint32_t from = unitArg(info, arg);
    uint32_t to = unitArg(info, arg + 1);
    int threads = info[arg + 2].As<Napi::Number>().Int32Value();
    bool descending = phase == Phase::Sparse && info[arg + 3].ToBoolean().Value();
    return solverCall(info.Env(), [&] {
      cck::KernelStats s{};
      switch (phase) {
        case Phase::Init: s = kernel_->solverInit(table, bytes, from, to, threads); break;
        case Phase::Pass: s = kernel_->solverPass(table, bytes, from, to, threads); break;
        case Phase::Sparse: s = kernel_->solverSparsePass(table, bytes, from, to, threads, descending); break;
        case Phase::DistanceInit: s = kernel_->solverDistanceInit(table, bytes, distances, distanceBytes, from, to, threads); break;
        case Phase::DistanceLayer:
          s = kernel_->solverDistanceLayer(table, bytes, distances, distanceBytes, depth, from, to, threads);
          break;
      }
      return Napi::Value(statsObject(info.Env(), s));
    });
  }
  Napi::Value SolverInit(const Napi::CallbackInfo& info) { return Solver(info, Phase::Init); }
  Napi::Value SolverPass(const Napi::CallbackInfo& info) { return Solver(info, Phase::Pass); }
  Napi::Value SolverSparsePass(const Napi::CallbackInfo& info) { return Solver(info, Phase::Sparse); }
  Napi::Value SolverDistanceInit(const Napi::CallbackInfo& info) { return Solver(info, Phase::DistanceInit); }
  Napi::Value SolverDistanceLayer(const Napi::CallbackInfo& info) { return Solver(info, Phase::DistanceLayer); }
  /** A typed array field of a band map object, of `groups` elements of the expected type. */
  template <class T>
  static const T* bandArray(const Napi::Object& o, const char* name, napi_typedarray_type type, size_t length) {
    Napi::Value v = o.Get(name);
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type) {
      throw Napi::TypeError::New(o.Env(), std::string("band map.") + name + (type == napi_int32_array ? " must be an Int32Array" : " must be a Uint32Array"));
    }
    Napi::TypedArray a = v.As<Napi::TypedArray>();
    if (a.ElementLength() < length) throw Napi::RangeError::New(o.Env(), std::string("band map.") + name + " is shorter than it must be");
    return reinterpret_cast<const T*>(static_cast<const uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset());
  }
  // solverBand(phase, table, map {held, bands, bandOf, slotOf, roundOf, groups}, input: Float64Array | undefined,
  // from, to, threads, output?: Float64Array, code?: boolean) -> {wins, losses, ..., messages: Float64Array,
  // counts: Float64Array, and where coded (see BandOutput) coded: Uint8Array, codedBytes: Float64Array}
  /** The band map of argument i: {held, bands, bandOf, slotOf, roundOf, groups} (views of the caller's arrays). */
  cck::BandMap bandMapArg(const Napi::CallbackInfo& info, size_t i) {
    Napi::Env env = info.Env();
    if (!info[i].IsObject()) throw Napi::TypeError::New(env, "argument " + std::to_string(i) + " must be a band map object");
    Napi::Object m = info[i].As<Napi::Object>();
    const size_t groups = kernel_->solverGroups();
    cck::BandMap map;
    const auto count = [&](const char* name) {
      Napi::Value v = m.Get(name);
      const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
      if (!(d >= 0 && d <= 2147483647.0) || d != static_cast<double>(static_cast<int64_t>(d))) {
        throw Napi::RangeError::New(env, std::string("band map.") + name + " must be an integer from 0 to 2^31 - 1");
      }
      return static_cast<int32_t>(d);
    };
    map.held = count("held");
    map.bands = static_cast<uint32_t>(count("bands"));
    map.bandOf = bandArray<int32_t>(m, "bandOf", napi_int32_array, groups);
    map.slotOf = bandArray<int32_t>(m, "slotOf", napi_int32_array, groups);
    map.roundOf = bandArray<int32_t>(m, "roundOf", napi_int32_array, map.bands);
    Napi::Value slots = m.Get("groups");
    map.slots = slots.IsTypedArray() ? static_cast<uint32_t>(slots.As<Napi::TypedArray>().ElementLength()) : 0;
    map.groups = bandArray<uint32_t>(m, "groups", napi_uint32_array, map.slots);
    return map;
  }
  Napi::Value SolverBand(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const int phase = info[0].As<Napi::Number>().Int32Value();
    if (phase < 0 || phase > static_cast<int>(cck::BandPhase::Apply)) throw Napi::RangeError::New(env, "unknown band phase");
    size_t bytes = 0;
    uint8_t* table = bytesArg(info, 1, bytes);
    const cck::BandMap map = bandMapArg(info, 2);
    const double* input = nullptr;
    size_t inputCount = 0;
    if (!info[3].IsUndefined()) {
      if (!info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
        throw Napi::TypeError::New(env, "argument 3 must be a Float64Array or undefined");
      }
      Napi::Float64Array a = info[3].As<Napi::Float64Array>();
      input = a.Data();
      inputCount = a.ElementLength();
    }
    const uint32_t from = unitArg(info, 4), to = unitArg(info, 5);
    const int threads = info[6].As<Napi::Number>().Int32Value();
    return solverCall(env, [&] {
      // Into the caller's buffer where they fit (a solve makes thousands of calls: new arrays
      // each time would pile up as garbage between collections, past a memory budget).
      cck::BandOutput out;
      Napi::Float64Array given;
      if (info.Length() > 7 && info[7].IsTypedArray() && info[7].As<Napi::TypedArray>().TypedArrayType() == napi_float64_array) {
        given = info[7].As<Napi::Float64Array>();
        out.given = given.Data();
        out.capacity = given.ElementLength();
        out.code = info.Length() > 8 && info[8].ToBoolean().Value();
      }
      const cck::KernelStats s = kernel_->solverBand(static_cast<cck::BandPhase>(phase), table, bytes, map, input, inputCount, from, to, threads, out);
      Napi::Object o = statsObject(env, s);
      Napi::Float64Array messages;
      if (out.coded) {
        // The runs in the caller's buffer's bytes; no doubles.
        messages = Napi::Float64Array::New(env, 0);
        Napi::Float64Array codedBytes = Napi::Float64Array::New(env, out.codedBytes.size());
        std::copy(out.codedBytes.begin(), out.codedBytes.end(), codedBytes.Data());
        o.Set("coded", Napi::Uint8Array::New(env, out.count, given.ArrayBuffer(), given.ByteOffset()));
        o.Set("codedBytes", codedBytes);
      } else if (out.inGiven) {
        messages = Napi::Float64Array::New(env, out.count, given.ArrayBuffer(), given.ByteOffset());
      } else {
        messages = Napi::Float64Array::New(env, out.count);
        std::copy_n(out.messages.begin(), out.count, messages.Data());  // the repeats dropped: count <= size
      }
      Napi::Float64Array counts = Napi::Float64Array::New(env, out.counts.size());
      std::copy(out.counts.begin(), out.counts.end(), counts.Data());
      o.Set("messages", messages);
      o.Set("counts", counts);
      return Napi::Value(o);
    });
  }
  // solverBandApplyRuns(table, map, runs: Uint8Array, from, state: Float64Array, threads)
  //   -> {wins, losses, ..., messages: number}: APPLY of the runs' values (message_runs.hpp)
  Napi::Value SolverBandApplyRuns(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    size_t bytes = 0, count = 0;
    uint8_t* table = bytesArg(info, 0, bytes);
    const cck::BandMap map = bandMapArg(info, 1);
    const uint8_t* runs = bytesArg(info, 2, count);
    const size_t from = indexArg(info, 3, count);
    double* state = runStateArg(info, 4);
    const int threads = info[5].As<Napi::Number>().Int32Value();
    return solverCall(env, [&] {
      uint64_t messages = 0;
      const cck::KernelStats s = kernel_->solverBandApplyRuns(table, bytes, map, runs, from, count, state, threads, messages);
      Napi::Object o = statsObject(env, s);
      o.Set("messages", static_cast<double>(messages));
      return Napi::Value(o);
    });
  }
  Napi::Value SolverPassUnits(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(kernel_->solverPassUnits()));
  }
  Napi::Value SolverGroups(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(kernel_->solverGroups()));
  }
};

class Addon : public Napi::Addon<Addon> {
 public:
  Addon(Napi::Env env, Napi::Object exports) {
    // The constants the TS core keeps in step with the C++ (tests compare them).
    Napi::Object constants = Napi::Object::New(env);
    constants.Set("revisitLag", static_cast<double>(cck::kRevisitLag));
    constants.Set("benchSamples", cck::kBenchSamples);
    constants.Set("describeFields", cck::kDescribeFields);
    constants.Set("messageRunState", static_cast<double>(cck::kMessageRunState));
    DefineAddon(exports, {InstanceValue("Kernel", Kernel::Define(env)), InstanceMethod("cpuInfo", &Addon::CpuInfo),
                          InstanceMethod("encodeMessageRun", &Addon::EncodeMessageRun),
                          InstanceMethod("decodeMessageRuns", &Addon::DecodeMessageRuns),
                          InstanceMethod("allocateTable", &Addon::AllocateTable), InstanceValue("constants", constants)});
  }

 private:
  // allocateTable(bytes, viewBytes) -> {buffers: ArrayBuffer[], address, hugePagesAdvised}: a
  // solver table of `bytes` zero bytes, of any size, as one mapping of anonymous memory aligned
  // to 2 MiB and, where the OS has it, madvise(MADV_HUGEPAGE): with transparent huge pages in
  // `madvise` mode the kernel then backs it with 2 MiB pages (fewer TLB misses in the passes'
  // random reads, a faster first touch). JS gets it as external ArrayBuffers of `viewBytes` bytes
  // each (the last one shorter): Node 20's N-API makes an external ArrayBuffer through a Buffer,
  // at most 2^32 bytes. Each buffer's finalizer unmaps its own part. `address` (exact in a double:
  // user addresses are below 2^53) finds the mapping in /proc/self/smaps.
  Napi::Value AllocateTable(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto sizeArg = [&](size_t i, double most) {
      const double d = info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : -1;
      if (!(d >= 1 && d <= most) || d != static_cast<double>(static_cast<uint64_t>(d))) {
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

NODE_API_ADDON(Addon)
