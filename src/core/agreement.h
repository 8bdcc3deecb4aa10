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
// The settings agreed for the whole job at MPI_Init (MPIZIP_PROTOCOL,
// MPIZIP_EAGER_BYTES, MPIZIP_BARE_BYTES: src/core/protocol.cc) are reconciled there and not
// checked again; settings that only shape what one rank does (its memory, its log, the codec's
// pipeline, whose form each message's header states) may differ.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/settings.h"

namespace mpizip::core {

// Collective over the intracommunicator `comm` (every rank calls it when it sets `comm` up): true
// when every rank holds the same values of the agreed settings in `values` (the communicator's:
// the process's settings with its hints, src/core/comm_hints.h). On false, `comm` is marked (see
// settings_disagree) and rank 0 of it has logged the one line. A failing allreduce counts as a
// disagreement (every rank sees it fail).
bool settings_agree(MPI_Comm comm, const Settings& values);

// The comparison beneath settings_agree, for other values that must agree (the hints of agreed
// settings, comm_hints.h). Collective over the intracommunicator `comm`: the indices of `mine`
// (the same list of settings on every rank) whose value differs on some rank, every index when
// the ranks could not compare them, none when they agree; every rank gets the same answer. Rank 0
// logs one line naming them and their values, ending with `consequence`: a warning, or at info
// level where `once` is given and already set (it is set by the first). One small allreduce; an
// allgather more when they differ.
std::vector<size_t> values_differ(MPI_Comm comm, const std::vector<AgreedValue>& mine,
                                  const char* consequence, std::atomic<bool>* once = nullptr);

// Whether settings_agree found `comm`'s ranks disagreeing. Cheap: no MPI call until some
// communicator of the process has disagreed.
bool settings_disagree(MPI_Comm comm);

// For tests: the hash of `values` that settings_agree compares, and the line it logs for the
// per-rank values `all` (all[rank][k]: rank's value of setting k, in agreed_values' order), or ""
// when they agree; `differ`, when given, receives the indices that differ.
uint64_t agreement_hash(const std::vector<AgreedValue>& values);
inline constexpr const char* kOffForComm =
    "MPIZip is off for that communicator: its calls go to the MPI library";
std::string disagreement_line(const std::vector<AgreedValue>& mine,
                              const std::vector<std::vector<uint64_t>>& all, const char* comm_name,
                              const char* consequence = kOffForComm,
                              std::vector<size_t>* differ = nullptr);

}  // namespace mpizip::core
