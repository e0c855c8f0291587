// CUDA graphs of a method's steps: a call costs one graph launch instead of
// one launch (and its host-side checks) per kernel.
//
// A method qualifies when it runs on a GPU with graphs enabled and every
// instruction is a kernel call (no jumps, moves or delegates), so one call's
// work is the same sequence of kernels with the same arguments whenever the
// same shapes come in, unless a kernel reads device data on the host (a
// host wait, which a capture refuses: see below). What can change between
// calls is then:
//  - the addresses: inputs used in place and the output buffers that take
//    turns (docs/python-api.md, B18) move;
//  - the shapes of dynamic-shape inputs (a prompt against a decode step's
//    one token), which decide every other shape.
// A graph is therefore kept per set of tensor addresses and dynamic input
// shapes (the key), at most kMaxGraphs of them:
//  - a key seen in one of the last kMaxGraphs calls that ran without a
//    graph is captured (the earlier run warmed everything a capture cannot
//    do: scratch growth, cuBLAS's handle and workspace) and the graph is
//    launched;
//  - a key with a graph launches it;
//  - anything else runs the steps as usual.
// Host-side effects of kernels (resizing, prim ops) happen during capture
// and are the same on every replay of that key; a replay restores the one
// the caller sees, the outputs' shapes. A method whose outputs are not all
// tensors is captured only when every shape is static. Values that a
// kernel reads from device memory (a decode step's position, once
// executor/rewrite.h's positions rewrite has put it there) change freely
// between replays. A graph whose device scratch has moved since (a larger
// call grew it) is dropped (backend::scratch_epoch). A capture
// that fails (a kernel that waits for the device, such as nonzero, or
// allocates) switches graphs off for the method, which then runs its steps
// as usual from that call on; so does a key that keeps changing (more than
// kMaxCaptures captures).

#include <algorithm>
#include <cstdint>

#include "pterun/backend/device.h"
#include "pterun/core/stats.h"
#include "pterun/executor/method.h"

namespace pterun {

namespace {
constexpr size_t kMaxGraphs = 4;
constexpr int kMaxCaptures = 16;
}  // namespace

bool Method::graphs_possible() {
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
  graph_dynamic_ = false;
  for (const auto& v : desc_->values) {
    graph_dynamic_ = graph_dynamic_ ||
                     (v.kind == ValueKind::Tensor && v.tensor->dynamism != ShapeDynamism::Static);
  }
  if (graph_dynamic_) {
    for (int32_t o : desc_->outputs) {
      if (desc_->values[o].kind != ValueKind::Tensor) return false;
    }
  }
  return true;
}

bool Method::run_graph() {
  if (graphs_mode_ == Graphs::Unknown) {
    graphs_mode_ = graphs_possible() ? Graphs::On : Graphs::Off;
  }
  if (graphs_mode_ == Graphs::Off) return false;
  const uint64_t epoch = backend::scratch_epoch(context_);
  if (epoch != graph_epoch_) {
    graphs_.clear();  // they hold the old scratch's addresses
    graph_epoch_ = epoch;
  }
  graph_key_.clear();
  for (const Tensor& t : tensors_) graph_key_.push_back(t.data());
  if (graph_dynamic_) {
    // Each dynamic input's shape, after a separator no address can equal.
    for (int32_t v : desc_->inputs) {
      const Value& value = values_[v];
      if (!value.is_tensor() || value.to_tensor().dynamism() == ShapeDynamism::Static) continue;
      graph_key_.push_back(nullptr);
      for (int64_t s : value.to_tensor().sizes()) {
        graph_key_.push_back(reinterpret_cast<const void*>(static_cast<uintptr_t>(s)));
      }
    }
  }
  for (const CapturedGraph& g : graphs_) {
    if (g.key == graph_key_) {
      backend::launch_graph(context_, g.exec);
      stats::add(stats::Counter::GraphLaunches);
      for (size_t i = 0; i < g.output_sizes.size(); ++i) {
        values_[desc_->outputs[i]].to_tensor().resize(g.output_sizes[i]);
      }
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
  std::vector<std::vector<int64_t>> output_sizes;
  if (graph_dynamic_) {
    for (int32_t o : desc_->outputs) {
      auto sizes = values_[o].to_tensor().sizes();
      output_sizes.emplace_back(sizes.begin(), sizes.end());
    }
  }
  graphs_.push_back({graph_key_, exec, std::move(output_sizes)});
  backend::launch_graph(context_, exec);
  stats::add(stats::Counter::GraphLaunches);
  return true;
}

}  // namespace pterun
