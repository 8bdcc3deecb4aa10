# cost: when compressing pays, a cost model per communicator fed by its messages' measurements
# (docs/DESIGN.md, "When to compress").
libmpizip_core_la_SOURCES += cost/model.h cost/model.cc
