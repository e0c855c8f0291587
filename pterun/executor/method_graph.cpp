// CUDA graphs of a method's steps: a call costs one graph launch instead of
// one launch (and its host-side checks) per kernel.
//
// A method qualifies when it runs on a GPU with graphs enabled, every tensor
// has a static shape and every instruction is a kernel call (no jumps, moves
// or delegates), so one call's work is the same sequence of kernels with the
// same arguments every time. Only the addresses can change between calls:
// inputs used in place and the output buffers that take turns (docs/python-api.md, B18) move.
// A graph is therefore kept per set of tensor addresses (the key), at most
// kMaxGraphs of them:
//  - a key seen in one of the last kMaxGraphs calls that ran without a
//    graph is captured (the earlier run warmed everything a capture cannot
//    do: scratch growth, cuBLAS's handle and workspace) and the graph is
//    launched;
//  - a key with a graph launches it;
//  - anything else runs the steps as usual.
// Host-side effects of kernels (resizing, prim ops) happen during capture
// and, the shapes being static, are the same on every replay. A capture
// that fails (a kernel that waits for the device, such as nonzero, or
// allocates) switches graphs off for the method, which then runs its steps
// as usual from that call on; so does a key that keeps changing (more than
// kMaxCaptures captures).

#include <algorithm>

#include "pterun/backend/device.h"
#include "pterun/core/stats.h"
#include "pterun/executor/method.h"

namespace pterun {

namespace {
constexpr size_t kMaxGraphs = 4;
constexpr int kMaxCaptures = 16;
}  // namespace

bool Method::graphs_possible() const {
  if (!options_.cuda_graphs || options_.device != Device::CUDA) return false;
  for (const auto& chain : chains_) {
    for (const Step& s : chain) {
      // Kernels, and no-ops (folded or fused away).
      if (s.kind != format::InstructionKind::KernelCall &&
          s.kind != format::InstructionKind::FreeCall) {
        return false;
      }
    }
  }
  for (const auto& v : desc_->values) {
    if (v.kind == ValueKind::Tensor && v.tensor->dynamism != ShapeDynamism::Static) return false;
  }
  return true;
}

bool Method::run_graph() {
  if (graphs_mode_ == Graphs::Unknown) {
    graphs_mode_ = graphs_possible() ? Graphs::On : Graphs::Off;
  }
  if (graphs_mode_ == Graphs::Off) return false;
  graph_key_.clear();
  for (const Tensor& t : tensors_) graph_key_.push_back(t.data());
  for (const CapturedGraph& g : graphs_) {
    if (g.key == graph_key_) {
      backend::launch_graph(context_, g.exec);
      stats::add(stats::Counter::GraphLaunches);
      return true;
    }
  }
  auto seen = std::find(graph_seen_.begin(), graph_seen_.end(), graph_key_);
  if (seen == graph_seen_.end()) {
    if (graph_seen_.size() == kMaxGraphs) graph_seen_.erase(graph_seen_.begin());
    graph_seen_.push_back(graph_key_);
    return false;
  }
  graph_seen_.erase(seen);
  if (++graph_captures_ > kMaxCaptures) {
    graphs_mode_ = Graphs::Off;
    return false;
  }
  backend::GraphExec exec;
  try {
    backend::begin_capture(context_);
    try {
      run_steps();
    } catch (...) {
      backend::end_capture(context_);
      throw;
    }
    exec = backend::end_capture(context_);
  } catch (...) {
    // Run as usual, now and from now on; a real error shows up again there.
  }
  if (exec == nullptr) {
    graphs_mode_ = Graphs::Off;
    graphs_.clear();
    return false;
  }
  if (graphs_.size() == kMaxGraphs) graphs_.erase(graphs_.begin());
  graphs_.push_back({graph_key_, exec});
  backend::launch_graph(context_, exec);
  stats::add(stats::Counter::GraphLaunches);
  return true;
}

}  // namespace pterun
