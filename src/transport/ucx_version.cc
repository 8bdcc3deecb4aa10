#include "src/transport/ucx_version.h"

#include "config.h"

#if defined(MPIZIP_HAVE_UCX)
#include <ucp/api/ucp.h>
#endif

namespace mpizip::transport {

std::string ucx_description() {
#if defined(MPIZIP_HAVE_UCX)
  return std::string("UCX ") + ucp_get_version_string();
#else
  return "built without UCX";
#endif
}

}  // namespace mpizip::transport
