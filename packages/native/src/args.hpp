// What crosses the N-API boundary of the addon (addon.cc): the readers of the arguments, each
// checking its argument's type and range (a TypeError or RangeError, never a wrong cast), the
// kernel's stats as a JS object, and the errors of the native solver's threads as JS errors.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>

#include "ccheckers/kernel_api.hpp"
#include "ccheckers/message_runs.hpp"

namespace cck_addon {

using cck::KernelApi;
using cck::PosWords;

// Whether `v` is a typed array of `type`: the check of every typed-array argument.
inline bool isTypedArrayOf(const Napi::Value& v, napi_typedarray_type type) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == type;
}

// Whether `d` is an integer from `least` to `most` (least >= 0): the check of a number argument
// before it is cast to an integer type (a cast would wrap 2^32 + 5 to 5, and NaN, a fraction or
// a number out of range is no index, unit or size). NaN fails the first comparison.
inline bool isIntegerIn(double d, double least, double most) {
  return d >= least && d <= most && d == static_cast<double>(static_cast<uint64_t>(d));
}

inline const uint32_t* wordsArg(const Napi::CallbackInfo& info, size_t i, size_t minLength) {
  if (!isTypedArrayOf(info[i], napi_uint32_array)) {
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a Uint32Array");
  }
  auto a = info[i].As<Napi::Uint32Array>();
  if (a.ElementLength() < minLength) throw Napi::RangeError::New(info.Env(), "Uint32Array argument too short");
  return a.Data();
}

inline uint32_t* outWords(const Napi::CallbackInfo& info, size_t i, size_t minLength) { return const_cast<uint32_t*>(wordsArg(info, i, minLength)); }

inline PosWords position(const Napi::CallbackInfo& info, size_t i) {
  const uint32_t* w = wordsArg(info, i, 7);
  PosWords p;
  for (int j = 0; j < 3; j++) {
    p.p1[j] = w[j];
    p.p2[j] = w[3 + j];
  }
  p.toMove = w[6] ? 1 : 0;
  return p;
}

inline uint8_t* bytesArg(const Napi::CallbackInfo& info, size_t i, size_t& length) {
  if (!isTypedArrayOf(info[i], napi_uint8_array)) {
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a Uint8Array");
  }
  auto a = info[i].As<Napi::Uint8Array>();
  length = a.ElementLength();
  return a.Data();
}

// A solver table or distance table (core's TableLike): a Uint8Array, or a TableBytes, whose
// bytes are one block of memory of any size (past the 4 GiB a typed array spans) seen through its
// `views`, which must be adjacent: the pointer of the first and the sum of their lengths.
inline uint8_t* tableArg(const Napi::CallbackInfo& info, size_t i, size_t& length) {
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
    if (!isTypedArrayOf(view, napi_uint8_array)) throw Napi::TypeError::New(info.Env(), what);
    auto bytes = view.As<Napi::Uint8Array>();
    if (v == 0) first = bytes.Data();
    if (bytes.Data() != first + length) {
      throw Napi::RangeError::New(info.Env(), "argument " + std::to_string(i) + ": the views of a TableBytes are not adjacent in memory");
    }
    length += bytes.ElementLength();
  }
  return first;
}

inline double* float64Arg(const Napi::CallbackInfo& info, size_t i, size_t& length) {
  if (!isTypedArrayOf(info[i], napi_float64_array)) {
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a Float64Array");
  }
  auto a = info[i].As<Napi::Float64Array>();
  length = a.ElementLength();
  return a.Data();
}

// The message coding of band files (message_runs.hpp; core's message-runs.ts checks the
// arguments' ranges the same way): an index of an array of `limit` elements (or its end), and a
// decoder's state.
inline size_t indexArg(const Napi::CallbackInfo& info, size_t i, size_t limit) {
  const double x = info[i].As<Napi::Number>().DoubleValue();
  if (!isIntegerIn(x, 0, static_cast<double>(limit))) {
    throw Napi::RangeError::New(info.Env(), "message coding: an argument is not an index of its array");
  }
  return static_cast<size_t>(x);
}

inline double* runStateArg(const Napi::CallbackInfo& info, size_t i) {
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
inline uint32_t unitArg(const Napi::CallbackInfo& info, size_t i) {
  if (!info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a unit number");
  double d = info[i].As<Napi::Number>().DoubleValue();
  if (!isIntegerIn(d, 0, 4294967295.0)) {
    throw Napi::RangeError::New(info.Env(), "unit " + std::to_string(d) + " is not an integer from 0 to 2^32 - 1");
  }
  return static_cast<uint32_t>(d);
}

// A count the solver passes (a memo's token, a budget in bytes): undefined is 0, anything else
// must be an integer from 0 to 2^53.
inline uint64_t countArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info[i].IsUndefined()) return 0;
  const double d = info[i].IsNumber() ? info[i].As<Napi::Number>().DoubleValue() : -1;
  if (!isIntegerIn(d, 0, 9007199254740992.0)) throw Napi::RangeError::New(info.Env(), std::string(what) + " must be an integer from 0 to 2^53");
  return static_cast<uint64_t>(d);
}

inline Napi::Object statsObject(Napi::Env env, const cck::KernelStats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("wins", static_cast<double>(s.wins));
  o.Set("losses", static_cast<double>(s.losses));
  o.Set("illegal", static_cast<double>(s.illegal));
  o.Set("terminal", static_cast<double>(s.terminal));
  o.Set("moveless", static_cast<double>(s.moveless));
  return o;
}

}  // namespace cck_addon
