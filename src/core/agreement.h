// Agreement: the settings that must be the same on every rank of a communicator (MPIZIP_AGREED in
// src/core/settings.def: the collectives' algorithms, sizes and thresholds, the TMA engine's
// shape, the transport) are checked when MPIZip sets a communicator up, with one small allreduce of
// a hash of their values. Ranks that hold different values would disagree on a collective's plan
// (one rank running MPIZip's engine while another calls the MPI library, pieces or CTA counts that
// do not match) and hang or compute garbage; instead MPIZip stays off for that communicator, on
// every rank alike: its calls go to the MPI library as on a communicator MPIZip never set up, with
// one log line (rank 0 of the communicator) naming the settings that differ and their values: a
// warning the first time in the process, at info level for later communicators (duplicates of one
// that disagreed disagree alike).
//
// The settings agreed for the whole job at MPI_Init (MPIZIP_PROTOCOL, MPIZIP_PROTOCOL_TYPES,
// MPIZIP_EAGER_BYTES, MPIZIP_BARE_BYTES: src/core/protocol.cc) are reconciled there and not
// checked again; settings that only shape what one rank does (its memory, its log, the codec's
// pipeline, whose form each message's header states) may differ.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/core/settings.h"

namespace mpizip::core {

// Collective over the intracommunicator `comm` (every rank calls it when it sets `comm` up): true
// when every rank holds the same values of the agreed settings. On false, `comm` is marked (see
// settings_disagree) and rank 0 of it has logged the one line. A failing allreduce counts as a
// disagreement (every rank sees it fail).
bool settings_agree(MPI_Comm comm);

// Whether settings_agree found `comm`'s ranks disagreeing. Cheap: no MPI call until some
// communicator of the process has disagreed.
bool settings_disagree(MPI_Comm comm);

// For tests: the hash of `values` that settings_agree compares, and the line it logs for the
// per-rank values `all` (all[rank][k]: rank's value of setting k, in agreed_values' order), or ""
// when they agree.
uint64_t agreement_hash(const std::vector<AgreedValue>& values);
std::string disagreement_line(const std::vector<AgreedValue>& mine,
                              const std::vector<std::vector<uint64_t>>& all, const char* comm_name);

}  // namespace mpizip::core
