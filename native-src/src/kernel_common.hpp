// Everything the kernel .inl files need, included before any target pragma so that the standard
// library and the shared helpers are compiled for the baseline CPU (safe to share between kernels).
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ccheckers/board_bits.hpp"
#include "ccheckers/geometry.hpp"
#include "ccheckers/jump_magic.hpp"
#include "ccheckers/kernel_api.hpp"
#include "ccheckers/message_runs.hpp"
#include "ccheckers/open_unit.hpp"
#include "ccheckers/pext_pdep.hpp"
#include "ccheckers/thread_pool.hpp"
