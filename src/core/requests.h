// The request engine: MPIZip operations behind application MPI_Requests, mixed freely with the MPI
// library's own requests in every wait and test call.
//
// A non-persistent operation sits behind a generalized request (MPI_Grequest_start): MPI itself
// knows the handle, and completes it when MPIZip calls MPI_Grequest_complete once the operation is
// done. A persistent operation (MPI_Send_init / MPI_Recv_init of a protocol datatype) sits behind a
// persistent request to MPI_PROC_NULL, whose completion MPIZip holds back until its operation is
// done. Operations advance inside MPIZip's wait and test calls (and every other call that asks for
// progress), so a posted operation completes whichever wait or test the application uses. Where
// nothing of MPIZip's is under way but the MPI library's own watched receives (request_watch), a
// wait blocks inside the MPI library, as the application's own call would, and looks at them once
// they complete: nothing then needs this thread's calls (docs/DESIGN.md, "Progress").
#pragma once

#include <mpi.h>

#include <atomic>
#include <functional>
#include <memory>

#include "src/platform/operation.h"

namespace mpizip::core {

// Registers `op` and returns the application's request for it. Errors of the operation are raised
// on `comm`'s error handler by the wait or test that completes it.
int request_start(std::unique_ptr<platform::Operation> op, MPI_Comm comm, MPI_Request* request);

// A persistent request whose every MPI_Start runs a fresh operation from `make` (which returns its
// status and the posted operation).
using OpFactory = std::function<Status(std::unique_ptr<platform::Operation>*)>;
int request_persistent(OpFactory make, MPI_Comm comm, MPI_Request* request);

// A receive posted straight to the MPI library, whose request the application holds (MPI's own),
// and whose message may turn out to be a match message that MPIZip must go on with
// (p2p/wire.h). The request engine calls landed() once MPI completed the request, in the wait,
// test or status call that saw it complete, on the calling thread (or in the background once the
// application freed the request).
class Landing {
 public:
  virtual ~Landing() = default;
  // MPI completed the receive with `rc` and filled `*st`. Returns the operation that goes on with
  // a match message (its status replaces MPI's), or null for the application's own message
  // (`rc` and `*st` stand, *st adjusted where MPI truncated a match message).
  virtual std::unique_ptr<platform::Operation> landed(int rc, MPI_Status* st) = 0;
  // MPI completed the receive (MPI_Request_get_status saw it, `st` its status) before a wait or
  // test did: read what must not wait for one (p2p::LandingGuard). landed() follows later.
  virtual void read_early(const MPI_Status& st) { (void)st; }
};

// Registers MPI's own receive request `mpi_request`, which the application holds, to be looked at
// by `landing` when it completes. Errors of the operation it goes on with are raised on `comm`.
void request_watch(MPI_Request mpi_request, std::unique_ptr<Landing> landing, MPI_Comm comm);

// Advances every registered operation once, without blocking.
void progress();

// Runs `op` (not registered) to completion, advancing every registered operation meanwhile: a
// blocking call must not stop the progress of the application's earlier non-blocking ones, whose
// peers may be waiting for them. Returns the operation's outcome (for the caller to report).
Status drive(platform::Operation& op);

// As drive(), for an operation that may finish in the background (Operation::detachable()): returns
// as soon as the application's part is done and keeps the rest running.
Status drive_detachable(std::unique_ptr<platform::Operation> op);

// Operations running in the background (detached sends). They advance with every progress() and
// end at the latest in background_drain(), which MPI_Finalize calls on every rank (collective over
// `world`) while the peers still progress; those still pending `grace_seconds` after every rank
// got there are abandoned with a log line.
size_t background_count();
// Runs `op` in the background from now on (bytes a closing transport still moves:
// transport::Transport::take_unsent).
void background_adopt(std::unique_ptr<platform::Operation> op);
void background_drain(MPI_Comm world, double grace_seconds);
// What the communicators closed after background_drain() handed over (background_adopt): every
// receive has completed by then, so only local progress is left; bounded like the drain's grace.
void background_finish(double grace_seconds);

// Fills an MPI_Status from an operation's status as MPI's single-completion calls do: source, tag,
// count and the cancelled flag; MPI_ERROR is left alone (MPI sets it only in the multiple-completion
// calls that return MPI_ERR_IN_STATUS). Returns the operation's MPI error code, reported
// (errors.h: one log line when it failed).
int fill_status(const platform::OpStatus& s, MPI_Status* status);

// The byte count a status reports: on truncation, the whole message's or the part delivered,
// whichever the MPI library beneath reports (status_truncation_reports_message(), found at
// MPI_Init by protocol_setup_job); otherwise the bytes delivered.
uint64_t reported_bytes(const platform::OpStatus& s);
void status_truncation_reports_message(bool whole);
// Whether the MPI library's probes (MPI_Probe, MPI_Iprobe) and matched probes (MPI_Mprobe,
// MPI_Improbe) set MPI_ERROR (to MPI_SUCCESS) in the status they fill, found at MPI_Init with
// status_truncation_reports_message(); MPIZip's probes do as the library's.
void status_probes_set_error(bool probe, bool matched_probe);
bool probe_sets_error(bool matched);

// Handlers of the interposed completion calls; same contracts as the MPI functions.
int wait(MPI_Request* request, MPI_Status* status);
int waitall(int count, MPI_Request requests[], MPI_Status statuses[]);
int waitany(int count, MPI_Request requests[], int* index, MPI_Status* status);
int waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
             MPI_Status statuses[]);
int test(MPI_Request* request, int* flag, MPI_Status* status);
int testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]);
int testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status);
int testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
             MPI_Status statuses[]);
int request_free(MPI_Request* request);
int cancel(MPI_Request* request);
int request_get_status(MPI_Request request, int* flag, MPI_Status* status);
int start(MPI_Request* request);
int startall(int count, MPI_Request requests[]);

// Number of registered requests (watched receives included) and background operations: MPIZip
// work still under way.
extern std::atomic<size_t> g_in_flight;
inline size_t request_count() { return g_in_flight.load(std::memory_order_acquire); }
// Of those, the watched receives (MPI's own requests, request_watch): nothing for the helper thread
// to advance, since they move inside the MPI library and are looked at by the completion calls.
extern std::atomic<size_t> g_watched;
// Whether any registered request or background operation is one the helper thread can advance.
inline bool helper_work() {
  return g_in_flight.load(std::memory_order_acquire) > g_watched.load(std::memory_order_acquire);
}

}  // namespace mpizip::core
