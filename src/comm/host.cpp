#include "comm/host.hpp"

#include <unistd.h>

#include <fstream>

namespace xtrain::comm {

std::string hostIdentity() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  std::getline(boot, bootId);
  return std::string(host) + "/" + bootId;
}

}  // namespace xtrain::comm
