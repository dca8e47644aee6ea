// The Kernel class of the addon (addon.cc): one C++ kernel (cck::KernelApi) of a variant, its
// rules and code path, with the engine's calls (moves, ranks, symmetries, describe, bench) and
// the solver's (the passes, the band steps) as methods, each reading its arguments (args.hpp).
#pragma once

#include <napi.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "args.hpp"

namespace cck_addon {

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
                           InstanceMethod<&Kernel::SolverListUnknown>("solverListUnknown"),
                           InstanceMethod<&Kernel::SolverListedPass>("solverListedPass"),
                           InstanceMethod<&Kernel::SolverReleaseUnknownLists>("solverReleaseUnknownLists"),
                           InstanceMethod<&Kernel::SolverDistanceInit>("solverDistanceInit"),
                           InstanceMethod<&Kernel::SolverDistanceLayer>("solverDistanceLayer"),
                           InstanceMethod<&Kernel::SolverBand>("solverBand"),
                           InstanceMethod<&Kernel::SolverBandApplyRuns>("solverBandApplyRuns"),
                           InstanceMethod<&Kernel::SolverGroups>("solverGroups"),
                           InstanceMethod<&Kernel::SolverPassUnits>("solverPassUnits"),
                           InstanceMethod<&Kernel::SolverReleaseSparseMemo>("solverReleaseSparseMemo"),
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
  enum class Phase { Init, Pass, Listed, Sparse, DistanceInit, DistanceLayer };
  // solverInit(table, from, to, threads); solverPass(table, from, to, threads); solverListedPass(table, from, to, threads);
  // solverSparsePass(table, from, to, threads, descending, memoToken, memoBudget);
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
    cck::SparseMemoKey memoKey;
    if (phase == Phase::Sparse) {
      memoKey.token = countArg(info, arg + 4, "sparse memo token");
      memoKey.budget = countArg(info, arg + 5, "sparse memo budget");
    }
    return solverCall(info.Env(), [&] {
      cck::KernelStats s{};
      switch (phase) {
        case Phase::Init: s = kernel_->solverInit(table, bytes, from, to, threads); break;
        case Phase::Pass: s = kernel_->solverPass(table, bytes, from, to, threads); break;
        case Phase::Listed: s = kernel_->solverListedPass(table, bytes, from, to, threads); break;
        case Phase::Sparse: s = kernel_->solverSparsePass(table, bytes, from, to, threads, descending, memoKey); break;
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
  Napi::Value SolverListedPass(const Napi::CallbackInfo& info) { return Solver(info, Phase::Listed); }
  Napi::Value SolverSparsePass(const Napi::CallbackInfo& info) { return Solver(info, Phase::Sparse); }
  // solverListUnknown(table, threads, budget) -> {states, bytes, listed}
  Napi::Value SolverListUnknown(const Napi::CallbackInfo& info) {
    size_t bytes = 0;
    uint8_t* table = tableArg(info, 0, bytes);
    const int threads = info[1].As<Napi::Number>().Int32Value();
    const uint64_t budget = countArg(info, 2, "unknown lists budget");
    return solverCall(info.Env(), [&] {
      const cck::ListedUnknown r = kernel_->solverListUnknown(table, bytes, threads, budget);
      Napi::Object o = Napi::Object::New(info.Env());
      o.Set("states", static_cast<double>(r.states));
      o.Set("bytes", static_cast<double>(r.bytes));
      o.Set("listed", r.listed);
      return Napi::Value(o);
    });
  }
  // solverReleaseUnknownLists() -> the bytes the lists held
  Napi::Value SolverReleaseUnknownLists(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(kernel_->solverReleaseUnknownLists()));
  }
  Napi::Value SolverDistanceInit(const Napi::CallbackInfo& info) { return Solver(info, Phase::DistanceInit); }
  Napi::Value SolverDistanceLayer(const Napi::CallbackInfo& info) { return Solver(info, Phase::DistanceLayer); }
  /** A typed array field of a band map object, of `groups` elements of the expected type. */
  template <class T>
  static const T* bandArray(const Napi::Object& o, const char* name, napi_typedarray_type type, size_t length) {
    Napi::Value v = o.Get(name);
    if (!isTypedArrayOf(v, type)) {
      throw Napi::TypeError::New(o.Env(), std::string("band map.") + name + (type == napi_int32_array ? " must be an Int32Array" : " must be a Uint32Array"));
    }
    Napi::TypedArray a = v.As<Napi::TypedArray>();
    if (a.ElementLength() < length) throw Napi::RangeError::New(o.Env(), std::string("band map.") + name + " is shorter than it must be");
    return reinterpret_cast<const T*>(static_cast<const uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset());
  }
  // solverBand(phase, table, map {held, bands, bandOf, slotOf, roundOf, groups, changedLines?}, input: Float64Array | undefined,
  // from, to, threads, output?: Float64Array, code?: boolean) -> {wins, losses, ..., messages: Float64Array,
  // counts: Float64Array, and where coded (see BandOutput) coded: Uint8Array, codedBytes: Float64Array}
  /** The band map of argument i, for a band of `bytes`: {held, bands, bandOf, slotOf, roundOf, groups,
   *  changedLines?} (views of the caller's arrays). */
  cck::BandMap bandMapArg(const Napi::CallbackInfo& info, size_t i, size_t bytes) {
    Napi::Env env = info.Env();
    if (!info[i].IsObject()) throw Napi::TypeError::New(env, "argument " + std::to_string(i) + " must be a band map object");
    Napi::Object m = info[i].As<Napi::Object>();
    const size_t groups = kernel_->solverGroups();
    cck::BandMap map;
    const auto count = [&](const char* name) {
      Napi::Value v = m.Get(name);
      const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
      if (!isIntegerIn(d, 0, 2147483647.0)) {
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
    if (!m.Get("changedLines").IsUndefined()) {
      map.changedLines = const_cast<uint32_t*>(bandArray<uint32_t>(m, "changedLines", napi_uint32_array, cck::changedLineWords(bytes)));
    }
    return map;
  }
  Napi::Value SolverBand(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const int phase = info[0].As<Napi::Number>().Int32Value();
    if (phase < 0 || phase > static_cast<int>(cck::BandPhase::Revisit)) throw Napi::RangeError::New(env, "unknown band phase");
    size_t bytes = 0;
    uint8_t* table = bytesArg(info, 1, bytes);
    const cck::BandMap map = bandMapArg(info, 2, bytes);
    const double* input = nullptr;
    size_t inputCount = 0;
    if (!info[3].IsUndefined()) {
      if (!isTypedArrayOf(info[3], napi_float64_array)) {
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
      if (info.Length() > 7 && isTypedArrayOf(info[7], napi_float64_array)) {
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
    const cck::BandMap map = bandMapArg(info, 1, bytes);
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
  // solverReleaseSparseMemo() -> the bytes the memo held
  Napi::Value SolverReleaseSparseMemo(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(kernel_->solverReleaseSparseMemo()));
  }
  Napi::Value SolverGroups(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(kernel_->solverGroups()));
  }
};

}  // namespace cck_addon
