// The UCX library this build uses, as mpizip-info reports it.
#pragma once

#include <string>

namespace mpizip::transport {

// "UCX <version>" when built with UCX (the version of the library loaded at run time), otherwise
// "built without UCX".
std::string ucx_description();

}  // namespace mpizip::transport
