#include "pterun/backend/device_info.h"

namespace pterun::backend {

int cuda_device_count() {
  return 0;
}

std::string cuda_unavailable_reason() {
  return "this build of pterun has no CUDA support";
}

bool built_with_cuda() {
  return false;
}

}  // namespace pterun::backend
