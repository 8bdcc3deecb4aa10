# coll: collectives. The two-shot compressed allreduce: the plan of shards and pieces, the hello and
# tags on the wire, the CPU and GPU backends, the per-communicator resources, the engine (its life
# in allreduce.cc, the steps of a piece in twoshot_pieces.cc).
libmpizip_core_la_SOURCES += \
	coll/plan.h coll/plan.cc \
	coll/wire.h coll/wire.cc \
	coll/backend.h coll/backend.cc coll/backend_host.cc \
	coll/resources.h coll/resources.cc \
	coll/allreduce.h coll/allreduce.cc coll/twoshot.h coll/twoshot_pieces.cc
if HAVE_CUDA
libmpizip_core_la_SOURCES += coll/backend_gpu.cu
else
libmpizip_core_la_SOURCES += coll/backend_gpu_none.cc
endif
# The TMA intra-node collectives: the planner, the tuning table, the group and entry points.
libmpizip_core_la_SOURCES += \
	coll/tma_plan.h coll/tma_plan.cc \
	coll/tma_tuning.h coll/tma_tuning.cc \
	coll/tma_coll.h coll/tma_coll.cc
noinst_HEADERS += coll/tma_tuning_table.inc
# The hierarchical composition across multi-GPU nodes (its stages run by src/core on the node and
# cross sub-communicators).
libmpizip_core_la_SOURCES += coll/hierarchical.h coll/hierarchical.cc
