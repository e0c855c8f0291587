#include "python/src/runtime.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "pterun/backend/device_info.h"
#include "pterun/core/error.h"
#include "pterun/core/logging.h"
#include "pterun/core/stats.h"
#include "pterun/core/threads.h"
#include "pterun/kernels/registry.h"

namespace nb = nanobind;

namespace pterun::python {

void init_runtime(nb::module_& m) {
  m.def(
      "stats",
      [] {
        nb::dict d;
        for (int i = 0; i < static_cast<int>(stats::Counter::kCount); ++i) {
          auto c = static_cast<stats::Counter>(i);
          d[stats::counter_name(c)] = stats::get(c);
        }
        return d;
      },
      "Process-wide counters: device_syncs, device_allocs, copies, layout_conversions, "
      "output_copies.");
  m.def(
      "_set_log_sink",
      [](nb::object callback) {
        if (callback.is_none()) {
          set_log_sink(nullptr);
          return;
        }
        // Held for the life of the process; called from any thread.
        auto* fn = new nb::object(std::move(callback));
        set_log_sink([fn](LogLevel level, const std::string& message) {
          if (!Py_IsInitialized()) return;
          nb::gil_scoped_acquire gil;
          try {
            (*fn)(static_cast<int>(level), message);
          } catch (nb::python_error& e) {
            e.discard_as_unraisable("pterun log sink");
          }
        });
      },
      nb::arg("callback"), "Internal: routes runtime messages to a Python callable.");
  m.def("reset_stats", &stats::reset, "Sets every counter of stats() to 0.");
  m.def("set_num_threads", &set_num_threads, nb::arg("n"),
        "Bounds the CPU threads one call may use (B15).");
  m.def("get_num_threads", &get_num_threads);
  m.def(
      "operator_names",
      [](const std::string& device) {
        PTERUN_CHECK(device == "cpu" || device == "cuda", ErrorCode::InvalidArgument,
                     "operator_names: device must be 'cpu' or 'cuda', got '", device, "'");
        return kernels::KernelRegistry::global().names(device == "cpu" ? Device::CPU
                                                                       : Device::CUDA);
      },
      nb::arg("device") = "cpu",
      "Operators this build has kernels for on 'cpu' or 'cuda' (sorted names such as "
      "'aten::add.out').");
  m.def("cuda_device_count", &backend::cuda_device_count,
        "Usable CUDA devices; 0 without a GPU, a driver, or CUDA support in this build.");
}

}  // namespace pterun::python
