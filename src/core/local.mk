# src/core: per-communicator state, settings, runtime, statistics.
libmpizip_core_la_SOURCES += \
	src/core/settings.def src/core/settings.h src/core/settings.cc \
	src/core/agreement.h src/core/agreement.cc \
	src/core/comm_state.h src/core/comm_state.cc \
	src/core/comm_context.h src/core/comm_context.cc \
	src/core/comm_hints.h src/core/comm_hints.cc \
	src/core/errors.h src/core/errors.cc \
	src/core/stats.h src/core/stats.cc \
	src/core/runtime.h src/core/runtime.cc \
	src/core/public_api.cc \
	src/core/protocol.h src/core/protocol.cc \
	src/core/type_signature.h src/core/type_signature.cc \
	src/core/mpi_beneath.h src/core/mpi_beneath.cc \
	src/core/requests.h src/core/requests.cc src/core/mpi_status.h \
	src/core/bsend_buffer.h src/core/bsend_buffer.cc \
	src/core/progress_thread.h src/core/progress_thread.cc \
	src/core/p2p_route.h src/core/p2p_bare.h src/core/p2p_way.h src/core/p2p_way.cc src/core/p2p_send.cc \
	src/core/p2p_recv.cc src/core/p2p_probe.cc \
	src/core/comm_lifecycle.h src/core/comm_lifecycle.cc
# Collective entry points (MPI_Allreduce, MPI_Iallreduce): policy and staging, engines in coll/.
# The v-collectives whose counts no rank knows all of as point-to-point messages (coll_pairwise.h);
# the other collectives go to the MPI library, device buffers staged through host memory.
libmpizip_core_la_SOURCES += src/core/coll_route.h src/core/coll_route.cc \
	src/core/coll_pairwise.h src/core/coll_pairwise.cc \
	src/core/coll_deferred.h src/core/coll_deferred.cc \
	src/core/reduce_type.h src/core/reduce_type.cc \
	src/core/coll_staging.h src/core/coll_staging.cc
