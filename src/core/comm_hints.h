// Per-communicator hints: MPI_Info keys that override a setting on one communicator (MPIZIP_HINT in
// src/core/settings.def: mpizip_compress for MPIZIP_HOST_COMPRESS, mpizip_min_bytes for
// MPIZIP_MIN_BYTES, mpizip_allreduce for MPIZIP_ALLREDUCE, mpizip_tma for MPIZIP_TMA).
//
// - MPI_Comm_set_info (collective) changes the communicator's values from those in force;
//   MPI_Comm_dup_with_info gives the new communicator the process's settings (the environment's)
//   with the info's hints, never its parent's; MPI_Comm_dup (and MPI_Comm_idup) copies the
//   parent's values, as MPI-4 has duplicates copy their parent's info. Communicators made any other
//   way start from the process's settings.
// - A value that is not one of the setting's keeps the value in force, with one warning; one
//   outside the setting's range is moved into it, as for the variable, with one warning.
// - Hints of settings that must be the same on every rank (MPIZIP_AGREED: mpizip_allreduce,
//   mpizip_tma) are compared across the communicator's ranks when given (src/core/agreement.h),
//   in the same collective call, wherever the job runs the protocol: where a value differs, rank 0
//   logs one warning and every rank keeps the process's value of that setting for the
//   communicator (MPIZip's default for it, which every rank holds alike). Nothing waits on a rank
//   that gave other hints or none.
// - MPIZip passes the info to the MPI library unchanged, so the library keeps the keys it knows;
//   MPI_Comm_get_info returns the library's keys and, on a communicator where MPIZip's protocol
//   runs, every hint with the value in force.
// - Operations copy what they need of the values when they start (the senders' policy, the
//   collectives' options), so changing the hints of a communicator with operations pending
//   changes only the operations started afterwards.
//
// The values in force are one immutable CommHints per change, published through CommState::hints;
// every CommHints a state has held stays alive with the state, so a reader needs no lock.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>

#include "p2p/channel.h"
#include "src/core/comm_state.h"
#include "src/core/settings.h"

namespace mpizip::core {

struct CommHints {
  Settings values;          // the settings in force on the communicator
  p2p::SendPolicy policy;   // its senders' policy (send_policy_for(values), protocol.h)
};

// The settings in force on the communicator of `s`: the process's, or those its hints changed.
inline const Settings& comm_settings(const CommState* s) {
  const CommHints* h = s != nullptr ? s->hints.load(std::memory_order_acquire) : nullptr;
  return h != nullptr ? h->values : settings();
}

// MPI_Comm_set_info and MPI_Comm_get_info. Same contracts as the MPI functions.
int comm_set_info(MPI_Comm comm, MPI_Info info);
int comm_get_info(MPI_Comm comm, MPI_Info* info_used);

// Collective over `newcomm`, just made by MPI_Comm_dup_with_info from `info`, before MPIZip sets it
// up: its values become the process's settings with the hints of `info`. A no-op for
// MPI_COMM_NULL.
void comm_hints_from_info(MPI_Comm newcomm, MPI_Info info);

// The attribute copy of a duplicated communicator: `child` gets the values of `parent`.
// The caller holds what serialises the states' registry.
void comm_hints_inherit(const CommState& parent, CommState* child);

}  // namespace mpizip::core
